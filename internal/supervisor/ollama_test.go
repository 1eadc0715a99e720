package supervisor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/ollamatest"
	"github.com/hiro-dev/hiro/internal/procfs"
)

// ollamaProfile prepares the tiny generated model in a fresh models
// directory and returns a profile running the real Ollama on a free
// loopback port, expecting model id model.
func ollamaProfile(t *testing.T, model string, port int) (*config.Profile, string) {
	t.Helper()
	bin := ollamatest.Binary(t) // skips with the reason when absent
	models := filepath.Join(t.TempDir(), "models")
	ollamatest.PrepareModels(t, models, map[string]string{
		ollamatest.TinyModel: ollamatest.ShippedModels(t)[ollamatest.TinyModel],
	})
	dir := t.TempDir()
	toml := "state_dir = \"state\"\n" + ollamatest.ProfileTOML("ollama", bin, port, model, models, dir, nil)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c.Backends["ollama"], c.StateDir
}

func TestOllamaStartStatusStop(t *testing.T) {
	port := freePort(t)
	p, state := ollamaProfile(t, ollamatest.TinyModel, port)
	proc, res := startFake(t, p, state)
	if res.State != StateReady {
		t.Fatalf("state %s failure %+v err %v", res.State, res.Failure, res.Err)
	}
	if !slices.Contains(res.ModelIDs, ollamatest.TinyModel+":latest") {
		t.Errorf("model ids %v lack %s:latest", res.ModelIDs, ollamatest.TinyModel)
	}
	if res.ProbeTTFTMS <= 0 && res.ProbeReply == "" {
		t.Errorf("no real completion was made: %+v", res)
	}
	if _, err := proc.Detach(); err != nil {
		t.Fatal(err)
	}
	st, err := Status(state, "ollama")
	if err != nil || st.Status != StatusRunning || st.PID != res.PID {
		t.Fatalf("status %+v %v", st, err)
	}
	// The model runner Ollama started for the probe is in the group.
	if st.ProcessesInGroup < 2 {
		t.Logf("processes in group: %d (the runner may have exited)", st.ProcessesInGroup)
	}
	_, sr, err := StopRecorded(context.Background(), state, "ollama", 0)
	if err != nil || sr.Leak != nil || !sr.PortFree {
		t.Fatalf("stop %+v %v", sr, err)
	}
	if left := procfs.GroupMembers(res.PGID); len(left) != 0 {
		t.Errorf("processes of the group left: %v", left)
	}
	if busy, why := portBusy("127.0.0.1:" + strconv.Itoa(port)); busy {
		t.Errorf("port %d still busy: %s", port, why)
	}
}

func TestOllamaIdentityMismatch(t *testing.T) {
	port := freePort(t)
	p, state := ollamaProfile(t, "hiro-no-such-model", port)
	proc, res := startFake(t, p, state)
	if proc != nil || res.State != StateFailed || res.Failure.Class != failure.ClassIdentityMismatch {
		t.Fatalf("state %s failure %+v", res.State, res.Failure)
	}
	d := res.Failure.Detail
	if d["expected_model"] != "hiro-no-such-model" || !slices.Contains(d["reported_models"].([]string), ollamatest.TinyModel+":latest") {
		t.Errorf("detail %v", d)
	}
	if res.Stop == nil || res.Stop.Leak != nil || !res.Stop.PortFree {
		t.Errorf("stop after the mismatch: %+v", res.Stop)
	}
}

// A model name one typo away from one the store has (issue 26, T3): the
// root cause lists the served models once (not again from the health
// answer), and the next step says to fix the profile's model name to the
// did-you-mean first, not to create the typo; the failure is marked as a
// model absent from the store (what qualify aborts on, T16).
func TestOllamaModelTypoListsOnceAndSaysFixTheName(t *testing.T) {
	port := freePort(t)
	p, state := ollamaProfile(t, "hiro-tyni", port)
	proc, res := startFake(t, p, state)
	if proc != nil || res.State != StateFailed || res.Failure.Class != failure.ClassIdentityMismatch {
		t.Fatalf("state %s failure %+v", res.State, res.Failure)
	}
	f, listed := res.Failure, strconv.Quote(ollamatest.TinyModel+":latest")
	if n := strings.Count(f.RootCause, listed); n != 2 || !strings.Contains(f.RootCause, "(did you mean "+listed+"?)") {
		t.Errorf("root cause %q names %s %d times, want once in the list and once as the did-you-mean", f.RootCause, listed, n)
	}
	if strings.Contains(f.RootCause, "create or pull") || !strings.Contains(f.RootCause, `"hiro-tyni" is not in /api/tags`) {
		t.Errorf("root cause %q: want where the model was looked for, and no remedy (the next step's)", f.RootCause)
	}
	if !strings.HasPrefix(f.NextStep, `The profile's model "hiro-tyni" is close to `+listed) ||
		!strings.Contains(f.NextStep, "fix the profile's model name first (model = "+listed+")") {
		t.Errorf("next step %q: want the name fix to the did-you-mean first", f.NextStep)
	}
	if !engine.ModelAbsent(f) {
		t.Errorf("detail %v: want %s", f.Detail, engine.DetailModelAbsent)
	}
}

func TestOllamaPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	p, state := ollamaProfile(t, ollamatest.TinyModel, port)
	proc, res := startFake(t, p, state)
	if proc != nil || res.State != StateFailed || res.Failure.Class != failure.ClassPortInUse || res.Failure.Phase != failure.PhaseLaunch {
		t.Fatalf("state %s failure %+v", res.State, res.Failure)
	}
	if res.PID != 0 {
		t.Errorf("a process was started: pid %d", res.PID)
	}
}

// hostHasNVIDIA reports an NVIDIA device node (a GPU the engine could use).
func hostHasNVIDIA() bool {
	_, err := os.Stat("/dev/nvidia0")
	return err == nil
}

// TestOllamaServingDevice: the ready verdict names the device the real
// Ollama serves from (its GPU discovery and the runner's offload lines),
// and a profile that requires an accelerator fails with
// accelerator_unavailable when the model is served by the CPU.
func TestOllamaServingDevice(t *testing.T) {
	port := freePort(t)
	p, state := ollamaProfile(t, ollamatest.TinyModel, port)
	proc, res := startFake(t, p, state)
	if res.State != StateReady {
		t.Fatalf("state %s failure %+v err %v", res.State, res.Failure, res.Err)
	}
	proc.Stop(context.Background())
	if res.Device == nil || res.Device.Evidence == "" {
		t.Fatalf("the ready verdict names no serving device: %+v (log %s)", res.Device, res.LogPath)
	}
	t.Logf("serving device: %s (evidence %q)", res.Device, res.Device.Evidence)
	if !hostHasNVIDIA() && res.Device.Kind != engine.DeviceCPU {
		t.Errorf("no GPU on this host, yet device %+v", res.Device)
	}

	p.RequiresAccelerator = true
	proc, res = startFake(t, p, state)
	if res.Device != nil && res.Device.Kind == engine.DeviceCPU {
		if proc != nil || res.State != StateFailed || res.Failure.Class != failure.ClassAcceleratorUnavailable ||
			res.Failure.Phase != failure.PhaseReadyWait {
			t.Fatalf("CPU serving with requires_accelerator: state %s failure %+v", res.State, res.Failure)
		}
		if !strings.Contains(res.Failure.RootCause, "requires an accelerator") || res.Failure.Detail["device"] != "CPU" {
			t.Errorf("root cause %q detail %v", res.Failure.RootCause, res.Failure.Detail)
		}
		if res.Stop == nil || res.Stop.Leak != nil {
			t.Errorf("stop after the refusal: %+v", res.Stop)
		}
	} else if res.State != StateReady {
		t.Fatalf("GPU serving with requires_accelerator: state %s failure %+v", res.State, res.Failure)
	}
}

// TestOllamaRealPortInUse: the real Ollama is told (OLLAMA_HOST) to bind
// a port another process holds, while the profile's own port is free, so
// hiro's check before launch passes and the engine itself fails. The
// supervisor classifies Ollama's real log: port_in_use in phase launch,
// its "bind: address already in use" line as root cause. The log is
// kept as the live case internal/engine/testdata/live/ollama-port-in-use.log
// (refreshed with HIRO_UPDATE_LIVE=1).
func TestOllamaRealPortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := freePort(t)
	p, state := ollamaProfile(t, ollamatest.TinyModel, port)
	p.Env["OLLAMA_HOST"] = held.Addr().String()
	proc, res := Start(context.Background(), p, Options{StateDir: state}) // once: the failure is the point
	if proc != nil {
		t.Cleanup(func() { proc.Stop(context.Background()) })
	}
	if proc != nil || res.State != StateFailed {
		t.Fatalf("state %s failure %+v", res.State, res.Failure)
	}
	f := res.Failure
	if f.Class != failure.ClassPortInUse || f.Phase != failure.PhaseLaunch || !strings.Contains(f.RootCause, "bind: address already in use") {
		t.Fatalf("class %s phase %s root cause %q (log %s)", f.Class, f.Phase, f.RootCause, res.LogPath)
	}
	if f.ExitCode == nil || *f.ExitCode != 1 {
		t.Errorf("exit %v", f.ExitCode)
	}
	if os.Getenv("HIRO_UPDATE_LIVE") != "" {
		b, err := os.ReadFile(res.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		_, file, _, _ := runtime.Caller(0)
		dst := filepath.Join(filepath.Dir(file), "..", "engine", "testdata", "live", "ollama-port-in-use.log")
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOllamaRealWithoutHome: the real 'ollama serve' given no HOME (a
// profile written before config load refused it: here the loaded profile
// with its HOME removed) exits with "Error: $HOME is not defined"; the
// supervisor says invalid_configuration in launch, strongly, with advice
// to fix the profile, not an unexplained engine_died (issue 26, F10).
func TestOllamaRealWithoutHome(t *testing.T) {
	bin := ollamatest.Binary(t) // skips with the reason when absent
	dir := t.TempDir()
	port := freePort(t)
	toml := "state_dir = \"state\"\n" + ollamatest.ProfileTOML("ollama", bin, port, ollamatest.TinyModel, filepath.Join(dir, "models"), dir, nil)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Backends["ollama"]
	delete(p.Env, "HOME")
	proc, res := Start(context.Background(), p, Options{StateDir: c.StateDir})
	if proc != nil {
		t.Cleanup(func() { proc.Stop(context.Background()) })
	}
	if proc != nil || res.State != StateFailed || res.Failure == nil {
		t.Fatalf("state %s failure %+v", res.State, res.Failure)
	}
	f := res.Failure
	if f.Class != failure.ClassInvalidConfiguration || f.Phase != failure.PhaseLaunch || f.Confidence != failure.ConfidenceStrong ||
		!strings.Contains(f.RootCause, "$HOME is not defined") || !strings.Contains(f.NextStep, "fix the profile's args or env") {
		t.Fatalf("class %s phase %s confidence %s root cause %q next step %q (log %s)", f.Class, f.Phase, f.Confidence, f.RootCause, f.NextStep, res.LogPath)
	}
}
