package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/procfs"
)

// kill -9 of only the engine's leader (as of 'ollama serve', whose
// 'ollama runner' stays in its group): 'backend status' counts what is
// left of the group, 'backend stop' ends it and says so, and /proc shows
// nothing of the group left.
func TestBackendStopEndsLeftoversOfStaleRecord(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	port := cliFreePort(t)
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[backends.fake]
engine = "llamacpp"
command = %q
args = ["--wrapper", "--port", "%d"]
port = %d
model = "fake-model"
stop_grace = "2s"
`, fake, port, port)), 0o644)
	code, out, errs := runHiro(t, "--config", cfg, "backend", "start", "fake", "--json")
	var res struct {
		PID int `json:"pid"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil || res.PID == 0 {
		t.Fatalf("start: exit %d\n%s\n%s", code, out, errs)
	}
	t.Cleanup(func() { syscall.Kill(-res.PID, syscall.SIGKILL) })
	var child int
	for _, s := range procfs.GroupMembers(res.PID) {
		if s.PID != res.PID {
			child = s.PID
		}
	}
	if child == 0 {
		t.Fatalf("the wrapped engine is not in group %d: %v", res.PID, procfs.GroupMembers(res.PID))
	}
	if err := syscall.Kill(res.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s, err := procfs.ReadStat(res.PID); err == nil && s.Alive() && time.Now().Before(deadline); s, err = procfs.ReadStat(res.PID) {
		time.Sleep(5 * time.Millisecond)
	}
	code, out, _ = runHiro(t, "--config", cfg, "backend", "status", "fake", "--json")
	var st struct {
		Status string `json:"status"`
		Procs  int    `json:"processes_in_group"`
	}
	if json.Unmarshal([]byte(out), &st) != nil || st.Status != "stale" || st.Procs != 1 {
		t.Errorf("status after kill -9 of the leader: exit %d %s; want stale with 1 process in the group", code, out)
	}
	code, out, errs = runHiro(t, "--config", cfg, "backend", "stop", "fake")
	if code != ExitOK || !strings.Contains(out, "stopped 1 leftover process of group") || strings.Contains(out, "nothing was signalled") {
		t.Errorf("stop: exit %d stdout %q stderr %q; want exit 0 saying it stopped the leftover", code, out, errs)
	}
	if left := procfs.GroupMembers(res.PID); len(left) != 0 {
		t.Errorf("group %d still has %v after stop (child %d)", res.PID, left, child)
	}
}
