package ollamatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/install-ollama.sh says how long a cold build takes on an idle
// and on a busy machine, and prints a heartbeat while the silent cgo build
// runs (issue 26, a new user's finding: 20 minutes of silence after
// "about 3 minutes cold"). The script runs for real under bash with a
// stand-in go on PATH whose install takes 3 s, the heartbeat's period set
// to 1 s.
func TestInstallOllamaScriptHeartbeat(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	stub, gopath := stubGo(t)
	cmd := exec.Command(bash, filepath.Join(RepoRoot(t), "scripts", "install-ollama.sh"))
	cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "HIRO_HEARTBEAT_SECONDS=1", "TMPDIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("install-ollama.sh: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(string(out)); got != filepath.Join(gopath, "bin", "ollama") {
		t.Errorf("stdout %q, want the binary's path", got)
	}
	log := stderr.String()
	if !strings.Contains(log, "about 3 minutes cold on 2 idle cores, 10-25 minutes on a busy machine") {
		t.Errorf("the build's first line does not give the busy machine's time:\n%s", log)
	}
	if n := strings.Count(log, "still building github.com/ollama/ollama@v0.6.5"); n < 1 {
		t.Errorf("no heartbeat during a 3 s build with a 1 s period:\n%s", log)
	}
}

// scripts/build.sh says what it builds and how long a cold build takes,
// prints the same heartbeat while go build runs (a newcomer saw 6
// minutes of silence on a cold cache), and ends with what it built and
// in how long; install-ollama.sh ends with a labelled line too (issue
// 26, the round's second fresh user, F1). Both run for real under bash
// with a stand-in go whose build takes 3 s, the period set to 1 s.
func TestBuildScriptsSayWhatTheyBuild(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	stub, gopath := stubGo(t)
	for _, c := range []struct {
		script string
		want   []string
	}{
		{"build.sh", []string{"build: building .bin/hiro and .bin/hiro-fake-engine (go build): about 4 minutes cold",
			"build: still building hiro (go build): ", "build: built .bin/hiro and .bin/hiro-fake-engine in "}},
		{"install-ollama.sh", []string{"install-ollama: built " + filepath.Join(gopath, "bin", "ollama") + " in "}},
	} {
		cmd := exec.Command(bash, filepath.Join(RepoRoot(t), "scripts", c.script))
		cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "HIRO_HEARTBEAT_SECONDS=1", "TMPDIR="+t.TempDir())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if _, err := cmd.Output(); err != nil {
			t.Fatalf("%s: %v\n%s", c.script, err, stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s does not say %q:\n%s", c.script, w, stderr.String())
			}
		}
	}
}

// TestInstallOllamaScriptKeepsWarningsAside (issue 26 N2): the cgo
// build's pages of harmless gcc warnings go to a log and one line says
// how many there were and where, instead of scrolling past a new user;
// a failed build prints its whole output. The stand-in go prints two
// warnings (or an error, with STUB_GO_FAIL).
func TestInstallOllamaScriptKeepsWarningsAside(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	for _, fail := range []string{"", "unknown type name 'nlohmann'"} {
		stub, _ := stubGo(t)
		cmd := exec.Command(bash, filepath.Join(RepoRoot(t), "scripts", "install-ollama.sh"))
		cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "HIRO_HEARTBEAT_SECONDS=60", "TMPDIR="+t.TempDir(), "STUB_GO_FAIL="+fail)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		log := stderr.String()
		if fail != "" {
			if err == nil || !strings.Contains(log, "error: "+fail) || !strings.Contains(log, "go install github.com/ollama/ollama@v0.6.5 failed (its output is above") {
				t.Errorf("a failed build: %v, its output not shown:\n%s", err, log)
			}
			continue
		}
		if err != nil {
			t.Fatalf("install-ollama.sh: %v\n%s", err, log)
		}
		if strings.Contains(log, "writing 32 bytes") {
			t.Errorf("the compiler's warnings reached the terminal:\n%s", log)
		}
		const want = "install-ollama: the C/C++ compiler printed 2 warnings on llama.cpp's code (gcc's -Wstringop-overflow and the like): harmless, the build succeeded; the output is in "
		i := strings.Index(log, want)
		if i < 0 {
			t.Fatalf("no line saying the warnings are harmless and where they are:\n%s", log)
		}
		path, _, _ := strings.Cut(log[i+len(want):], "\n")
		if b, err := os.ReadFile(path); err != nil || strings.Count(string(b), ": warning: ") != 2 {
			t.Errorf("the log %s does not hold the two warnings: %v %q", path, err, b)
		}
	}
}

// stubGo writes a stand-in go (and dpkg-query) into a folder for PATH:
// its install of Ollama and its build each take 3 s; gopath is what its
// 'go env GOPATH' says.
func stubGo(t *testing.T) (stub, gopath string) {
	stub, gopath = t.TempDir(), t.TempDir()
	goStub := `#!/bin/sh
case "$1" in
  env) echo "` + gopath + `" ;;
  version) [ -x "` + gopath + `/bin/ollama" ] && printf '\tmod\tgithub.com/ollama/ollama\tv0.6.5\th1:x\n' || exit 1 ;;
  install) if [ -n "$STUB_GO_FAIL" ]; then echo "ggml.c:1:1: error: $STUB_GO_FAIL" >&2; exit 1; fi
    echo "# github.com/ollama/ollama/ml/backend/ggml/ggml/src/ggml-cpu" >&2
    echo "ggml-cpu-aarch64.cpp:3614:19: warning: writing 32 bytes into a region of size 0 [-Wstringop-overflow=]" >&2
    echo "ggml-cpu-aarch64.cpp:3620:19: warning: writing 32 bytes into a region of size 0 [-Wstringop-overflow=]" >&2
    sleep 3; mkdir -p "` + gopath + `/bin"; printf '#!/bin/sh\n' > "` + gopath + `/bin/ollama"; chmod +x "` + gopath + `/bin/ollama" ;;
  build) sleep 3 ;;
esac
`
	for name, body := range map[string]string{"go": goStub, "dpkg-query": "#!/bin/sh\necho 'install ok installed'\n"} {
		if err := os.WriteFile(filepath.Join(stub, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return stub, gopath
}
