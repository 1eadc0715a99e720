package qualify

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// An exclusive campaign whose production's record names a live router
// this hiro cannot reach (one under another HOME: trial 10's Q23, where
// the campaign stopped production and that router restarted it beside
// the exclusive candidate) is refused before anything starts, busy
// (lease.ErrHeld, exit 6), naming the router; a record whose live owner
// is not a router, or none, is no refusal.
func TestExclusiveCampaignRefusedWhenAnotherHomesRouterWatches(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir()) // no router's control socket here
	sleeper := func(pgroup bool) (int, uint64) {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: pgroup}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		ticks, ok := procfs.StartTicks(cmd.Process.Pid)
		if !ok {
			t.Skip("no /proc start time here")
		}
		return cmd.Process.Pid, ticks
	}
	enginePID, engineTicks := sleeper(true)
	routerPID, routerTicks := sleeper(false)
	dir := t.TempDir()
	cfg := &config.Config{Path: filepath.Join(dir, "hiro.toml"), StateDir: filepath.Join(dir, "state")}
	prod := &config.Profile{Name: "prod", BaseURL: "http://127.0.0.1:1"}
	write := func(what string) {
		rec := supervisor.Record{Name: "prod", PID: enginePID, PGID: enginePID, StartTicks: engineTicks, BaseURL: prod.BaseURL,
			Owner: &supervisor.Owner{PID: routerPID, StartTicks: routerTicks, What: what}}
		if err := supervisor.WriteRecord(cfg.StateDir, rec); err != nil {
			t.Fatal(err)
		}
	}
	write(production.RouterOwner)
	err := routerElsewhere(context.Background(), cfg, prod)
	var re *RouterElsewhereError
	if !errors.As(err, &re) || !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("a live router of another HOME watches production: %v, want a RouterElsewhereError (busy)", err)
	}
	for _, want := range []string{"hiro serve (pid " + strconv.Itoa(routerPID) + ")", "kill -TERM " + strconv.Itoa(routerPID), "nothing was started or stopped"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	write("'hiro backend start prod'")
	if err := routerElsewhere(context.Background(), cfg, prod); err != nil {
		t.Errorf("a live owner that is no router: %v, want nil", err)
	}
}
