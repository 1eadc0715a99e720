package version

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolveLdflagsWin(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "bbbb"}}}
	in := resolve("v1.2.3", "aaaa-dirty", "2026-11-30T12:00:00Z", bi)
	if in.Version != "v1.2.3" || in.Revision != "aaaa" || !in.Modified || in.Time != "2026-11-30T12:00:00Z" || in.Source != "ldflags" || in.GoVersion != "go1.26.0" {
		t.Fatalf("got %+v", in)
	}
	s := in.String()
	for _, want := range []string{"hiro v1.2.3\n", "revision  aaaa (modified)\n", "time      2026-11-30T12:00:00Z\n", "go        go1.26.0 " + runtime.GOOS} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, missing %q", s, want)
		}
	}
}

func TestResolveBuildInfoFallback(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "cafe"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	in := resolve("", "", "", bi)
	if in.Version != "v0.4.0" || in.Revision != "cafe" || in.Time != "2026-01-02T03:04:05Z" || !in.Modified || in.Source != "buildinfo" {
		t.Fatalf("got %+v", in)
	}
	in = resolve("", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	if in.Version != "devel" || in.Revision != "" || !strings.Contains(in.String(), "revision  unknown") {
		t.Fatalf("no information: got %+v / %q", in, in.String())
	}
	if in.GoVersion != runtime.Version() {
		t.Errorf("go version %q, want the runtime's %q", in.GoVersion, runtime.Version())
	}
}

// The build script must stamp the variables this package declares.
func TestBuildScriptStampsTheseVariables(t *testing.T) {
	b, err := os.ReadFile("../../scripts/build.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"Version", "Revision", "Time"} {
		if !strings.Contains(string(b), "github.com/hiro-dev/hiro/internal/version."+v+"=") {
			t.Errorf("scripts/build.sh does not set internal/version.%s with -ldflags -X", v)
		}
	}
}
