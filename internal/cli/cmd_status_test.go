package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/production"
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

// TestStatusWarnsOfSwitchElsewhere (issue 26 G11): another configuration
// file (hiro2.toml, same production endpoint) recorded a switch from prod
// to side; the router of hiro.toml serves prod. 'hiro status' warns of it
// on stderr as 'hiro serve' does at its start, in text and --json; it
// said nothing.
func TestStatusWarnsOfSwitchElsewhere(t *testing.T) {
	dir := serveTestState(t)
	pp, sp, lp := cliFreePort(t), cliFreePort(t), cliFreePort(t)
	cfgPath := routerConfig(t, dir, "hiro.toml", pp, sp, lp)
	cfg2Path := routerConfig(t, dir, "hiro2.toml", pp, sp, lp)
	cfg2, err := config.Load(cfg2Path)
	must(t, err)
	a2, err := production.Resolve(cfg2)
	must(t, err)
	must(t, production.Append(&production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: cfg2.Path,
		From: &a2.Snapshot, To: production.Snap(cfg2.Backends["side"], "base", "activation"), StartedAt: time.Now(), FinishedAt: time.Now()}))
	startRouter(t, cfgPath)
	want := cfg2.Path + " switched production from prod to side at "
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"--config", cfgPath, "status"}, &out, &errb); code != ExitOK ||
		!strings.Contains(errb.String(), "hiro: status: warning: "+want) || !strings.Contains(errb.String(), "'hiro --config "+cfg2.Path+" rollback'") {
		t.Errorf("status: exit %d, stderr lacks the warning %q:\n%s", code, want, errb.String())
	}
	out.Reset()
	errb.Reset()
	var w struct{ Warning string }
	if code := Run(context.Background(), []string{"--config", cfgPath, "status", "--json"}, &out, &errb); code != ExitOK ||
		json.Unmarshal(errb.Bytes(), &w) != nil || !strings.Contains(w.Warning, want) {
		t.Errorf("status --json: exit %d, stderr lacks the JSON warning %q:\n%s", code, want, errb.String())
	}
}
