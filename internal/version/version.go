package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set with -ldflags -X by scripts/build.sh; empty in a plain 'go build'.
var (
	// Version is the release name ("v0.3.0"), or a 'git describe' of the
	// build's commit.
	Version string
	// Revision is the full VCS commit hash; a "-dirty" suffix means the
	// work tree had uncommitted changes.
	Revision string
	// Time is the commit time, RFC 3339.
	Time string
)

// Info is what 'hiro version' prints.
type Info struct {
	// Version is the release or 'git describe' name; "devel" when unknown.
	Version string `json:"version"`
	// Revision is the VCS commit hash; empty when unknown.
	Revision string `json:"revision,omitempty"`
	// Time is the commit time (RFC 3339); empty when unknown.
	Time string `json:"time,omitempty"`
	// Modified is true when the work tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary ("go1.26.0").
	GoVersion string `json:"go_version"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
	// Source says where Revision came from: "ldflags" (scripts/build.sh),
	// "buildinfo" (Go's VCS stamp) or "" when unknown.
	Source string `json:"source,omitempty"`
}

// Get returns the running binary's Info: the -ldflags stamp first, the
// embedded build information as fallback.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Revision, Time, bi)
}

// resolve merges the -ldflags values with the build information bi (nil
// when the binary has none).
func resolve(version, revision, commitTime string, bi *debug.BuildInfo) Info {
	in := Info{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil && bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	if revision != "" {
		in.Revision, in.Time, in.Source = revision, commitTime, "ldflags"
		if r, ok := strings.CutSuffix(revision, "-dirty"); ok {
			in.Revision, in.Modified = r, true
		}
	} else if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision, in.Source = s.Value, "buildinfo"
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		in.Version = bi.Main.Version
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	return in
}

// String is the multi-line text of 'hiro version':
//
//	hiro v0.3.0
//	revision  0123abcd... (modified)
//	time      2026-11-30T12:00:00Z
//	go        go1.26.0 linux/amd64
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hiro %s\n", in.Version)
	rev := in.Revision
	if rev == "" {
		rev = "unknown (built without VCS information; scripts/build.sh stamps it)"
	} else if in.Modified {
		rev += " (modified)"
	}
	fmt.Fprintf(&b, "revision  %s\n", rev)
	t := in.Time
	if t == "" {
		t = "unknown"
	}
	fmt.Fprintf(&b, "time      %s\n", t)
	fmt.Fprintf(&b, "go        %s %s\n", in.GoVersion, in.Platform)
	return b.String()
}
