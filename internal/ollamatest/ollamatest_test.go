package ollamatest

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFindBinaryHonoursHiroOllama(t *testing.T) {
	t.Setenv("HIRO_OLLAMA", filepath.Join(t.TempDir(), "no-such-ollama"))
	_, err := FindBinary()
	if err == nil || !strings.Contains(err.Error(), "HIRO_OLLAMA") {
		t.Fatalf("FindBinary with a missing $HIRO_OLLAMA: %v, want an error naming the variable", err)
	}
}

func TestFreePortIsBindable(t *testing.T) {
	p := FreePort(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(p)))
	if err != nil {
		t.Fatalf("port %d from FreePort cannot be bound: %v", p, err)
	}
	l.Close()
}

func TestPrepareStartServeStop(t *testing.T) {
	Binary(t)
	dir := t.TempDir()
	PrepareModels(t, dir, map[string]string{TinyModel: ShippedModels(t)[TinyModel]})
	s := Start(t, dir)
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Data) != 1 || list.Data[0].ID != TinyModel+":latest" {
		t.Fatalf("/v1/models after PrepareModels: %+v (%v), want only %s:latest", list, err, TinyModel)
	}
	pid := s.cmd.Process.Pid
	s.Stop()
	if err := syscall.Kill(-pid, 0); err == nil {
		t.Errorf("process group %d still has processes after Stop", pid)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Host, 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("port %s still accepts connections after Stop", s.Host)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Requests keeps what tells a slow or failed request from a bug (issue 26,
// F18): the request lines and the warnings and errors, in order, not the
// route table, the model's load banner or the warnings of every load.
func TestServerRequestsKeepsRequestsAndErrors(t *testing.T) {
	s := &Server{Log: filepath.Join(t.TempDir(), "serve.log")}
	if got := s.Requests(10); got != "(no request or error recorded)" {
		t.Errorf("no log: %q", got)
	}
	log := `[GIN-debug] POST   /v1/chat/completions      --> github.com/ollama/ollama/server.(*Server).ChatHandler-fm (6 handlers)
print_info: model params     = 6.56 M
time=2026-12-02T02:24:21.623Z level=WARN source=ggml.go:152 msg="key not found" key=llama.vision.block_count default=0
[GIN] 2026/12/02 - 02:01:47 | 200 | 43.359942097s |       127.0.0.1 | POST     "/v1/chat/completions"
time=2026-12-02T02:03:00.000Z level=WARN source=runner.go:1 msg="client connection closed before server finished loading, aborting load"
[GIN] 2026/12/02 - 02:03:04 | 499 |          2m0s |       127.0.0.1 | POST     "/v1/chat/completions"
time=2026-12-02T02:03:05.000Z level=ERROR source=server.go:1 msg="llama runner terminated" error="signal: killed"
[GIN] 2026/12/02 - 02:03:06 | 500 |   12.1ms |       127.0.0.1 | POST     "/v1/chat/completions"
`
	if err := os.WriteFile(s.Log, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := s.Requests(10)
	if strings.Contains(got, "GIN-debug") || strings.Contains(got, "print_info") || strings.Contains(got, "key not found") {
		t.Errorf("Requests kept the route table, the load banner or its warnings:\n%s", got)
	}
	for _, want := range []string{"| 200 | 43.359942097s", "level=WARN", "| 499 |          2m0s", "llama runner terminated", "| 500 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("Requests lacks %q:\n%s", want, got)
		}
	}
	if got := s.Requests(2); strings.Count(got, "\n") != 1 || !strings.Contains(got, "| 500 |") {
		t.Errorf("Requests(2) is not the last two lines:\n%s", got)
	}
}
