package cli

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// A control socket another user made answers like a router ("production
// ready"); hiro status refuses it, naming the socket and its owner, and
// prints nothing it said. Before, status printed the planted answer.
func TestStatusRefusesAnotherUsersSocket(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	dir, err := private.Control.Ensure()
	if err != nil {
		t.Fatal(err)
	}
	path := control.SocketPath(dir)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"schema":"` + control.StatusSchema + `","listen":"127.0.0.1:1","config":"planted.toml","production":{"name":"planted","state":"ready"}}`))
	}))
	// The socket answers while it is this user's own.
	if code, out, errs := runHiro(t, "status"); !strings.Contains(out, "planted") {
		t.Fatalf("status of an own socket: %d %q %q; want the router's answer", code, out, errs)
	}
	testsupport.GiveToNobody(t, path)
	code, out, errs := runHiro(t, "status")
	if code != ExitFailed || strings.Contains(out, "planted") || !strings.Contains(errs, path) || !strings.Contains(errs, "uid 65534") {
		t.Fatalf("status of a socket owned by nobody: %d %q %q; want it refused, naming the socket and its owner", code, out, errs)
	}
	// A socket folder another user owns is refused the same way.
	testsupport.GiveToNobody(t, filepath.Dir(path))
	if code, out, errs := runHiro(t, "status"); code != ExitFailed || strings.Contains(out, "planted") || !strings.Contains(errs, dir) {
		t.Fatalf("status in a folder owned by nobody: %d %q %q", code, out, errs)
	}
}
