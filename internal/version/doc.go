// Package version says which hiro this is: its version, the VCS revision
// and commit time it was built from, and the Go toolchain that built it.
//
// scripts/build.sh stamps Version, Revision and Time with
// -ldflags "-X github.com/hiro-dev/hiro/internal/version.Revision=..."
// (GOFLAGS=-buildvcs=false, common in CI, turns Go's own VCS stamping
// off). Without the stamp, the build information Go embeds in the binary
// is the fallback: vcs.revision, vcs.time and vcs.modified when present,
// the module version for 'go install ...@version'.
//
// The package reads build information only; it owns nothing else.
package version
