package ollamatest

import (
	"encoding/json"
	"net"
	"net/http"
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
