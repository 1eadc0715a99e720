package activation_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/activation"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/exitcode"
	"github.com/hiro-dev/hiro/internal/journal"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/preflight"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/signing"
)

func opts(w *world) activation.Options {
	return activation.Options{JournalDir: w.journal, Progress: func(s string) { w.t.Log(s) }}
}

// The life cycle with real processes: a campaign qualifies the candidate
// on a fallback variant; activate runs THAT variant, verified, stops the
// old production and records it; every command now resolves production
// to it; rollback returns to the first production, verified; a second
// rollback has nothing to go back to.
func TestActivateThenRollback(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()

	out, err := activation.Activate(context.Background(), w.cfg, evPath, opts(w))
	if err != nil {
		t.Fatalf("activate: %v", err)
	}
	r := out.Record
	if out.ExitCode != activation.ExitSwitched || r.Outcome != production.OutcomeSwitched {
		t.Fatalf("exit %d outcome %s (%s)", out.ExitCode, r.Outcome, r.Error)
	}
	if r.Verified == nil || !r.Verified.OK || r.Verified.Reply != "READY" || r.Verified.Model != "cand-model" {
		t.Fatalf("new production not verified: %+v", r.Verified)
	}
	a, err := production.Resolve(w.cfg)
	must(t, err)
	if a.Name != "cand" || a.Variant != "no-exit" || a.Seq != r.Seq {
		t.Fatalf("active production %s variant %s seq %d, want cand no-exit %d", a.Name, a.Variant, a.Seq, r.Seq)
	}
	// What runs is what qualified: the variant, not the file's profile.
	st, ok := w.running("cand")
	if !ok {
		t.Fatal("cand is not running")
	}
	eff, _ := production.ProfileFor(w.cfg, "cand")
	if st.ProfileHash != eff.Hash() || st.ProfileHash == w.cfg.Backends["cand"].Hash() {
		t.Fatalf("cand runs profile %s, want the variant's %s", st.ProfileHash, eff.Hash())
	}
	if eff.Env["CAND_MODE"] != "fallback" || strings.Contains(strings.Join(eff.Args, " "), "--exit") {
		t.Fatalf("effective profile env %v args %v, want the variant's", eff.Env, eff.Args)
	}
	if _, ok := w.running("prod"); ok || w.ready("prod") {
		t.Fatal("the old production still runs after the switch")
	}
	// The journal tells it in one sentence.
	j, err := journal.Load(w.journal)
	must(t, err)
	ev, _ := evidence.Load(evPath)
	want := "Production switched from prod to cand (variant no-exit) on the evidence of campaign " + ev.ID
	if len(j.Entries) != 1 || j.Entries[0].Title != want {
		t.Fatalf("journal entries %d, first %q; want %q", len(j.Entries), title(j), want)
	}
	// Its summary says what the title does not: the proof and the way back.
	if s := j.Entries[0].Summary; strings.Contains(s, "switched from") || !strings.Contains(s, `cand (variant no-exit) was started and verified ready (health`) ||
		!strings.Contains(s, `READY reply "READY"`) || !strings.HasSuffix(s, "'hiro rollback' returns to prod.") {
		t.Fatalf("journal summary %q: want the new production's proof and the rollback target, not the title", s)
	}
	// Its current state names the record a user would look for, and where
	// such records live, without the private path.
	if cs := j.Entries[0].CurrentState; !strings.Contains(cs, "The switch's record is "+filepath.Base(r.Path)+",") ||
		!strings.Contains(cs, "HIRO_PRODUCTION_DIR") || !strings.Contains(cs, "HIRO_STATE_HOME") || strings.Contains(cs, filepath.Dir(r.Path)) {
		t.Fatalf("journal current state %q: want the record's file name and the variables that place it", cs)
	}
	// The record is the switch's evidence, private.
	if fi, err := os.Stat(r.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record %s: %v %v", r.Path, fi, err)
	}
	// It says whose signature it acted on, and is signed itself.
	if !strings.HasPrefix(r.Trust, "signed by SHA256:") || !strings.Contains(r.Trust, "own key") {
		t.Fatalf("record trust %q, want signed by the own key", r.Trust)
	}
	recBytes, _ := os.ReadFile(r.Path)
	if _, err := signing.Verify(recBytes); err != nil {
		t.Fatalf("the activation record's signature: %v", err)
	}

	// The same evidence again: the candidate is production already.
	if _, err := activation.Activate(context.Background(), w.cfg, evPath, opts(w)); !refusedOn(err, "candidate") {
		t.Fatalf("second activation: %v, want refused on candidate", err)
	}

	// The previous production's configuration changed: rollback refuses,
	// naming the file, and touches nothing.
	launcher := filepath.Join(w.dir, "prod-launcher.sh")
	lorig, _ := os.ReadFile(launcher)
	must(t, os.WriteFile(launcher, []byte("#!/bin/sh\n# edited after the activation\n"), 0o755))
	if _, err := activation.Rollback(context.Background(), w.cfg, opts(w)); !refusedOn(err, "config_files["+launcher+"]") {
		t.Fatalf("rollback onto a changed configuration: %v, want refused on its launcher", err)
	}
	if _, ok := w.running("cand"); !ok {
		t.Fatal("a refused rollback stopped the active production")
	}
	must(t, os.WriteFile(launcher, lorig, 0o755))

	// A record edited after it was written is not rolled back from.
	must(t, os.WriteFile(r.Path, []byte(strings.Replace(string(recBytes), `"router": false`, `"router": true`, 1)), 0o600))
	if _, err := activation.Rollback(context.Background(), w.cfg, opts(w)); !refusedOn(err, "signature") || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("rollback from an edited record: %v, want refused on its signature", err)
	}
	must(t, os.WriteFile(r.Path, recBytes, 0o600))

	back, err := activation.Rollback(context.Background(), w.cfg, opts(w))
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if back.ExitCode != 0 || back.Record.Verified == nil || !back.Record.Verified.OK || back.Record.Verified.Model != "prod-model" {
		t.Fatalf("rollback exit %d verified %+v (%s)", back.ExitCode, back.Record.Verified, back.Record.Error)
	}
	if a, _ := production.Resolve(w.cfg); a.Name != "prod" || a.Record.Kind != production.KindRollback || a.Record.Undid != r.Seq {
		t.Fatalf("after rollback production is %s (%+v)", a.Name, a.Record)
	}
	if !w.ready("prod") {
		t.Fatal("prod does not answer ready after the rollback")
	}
	if _, ok := w.running("cand"); ok {
		t.Fatal("cand still runs after the rollback")
	}
	if _, err := activation.Rollback(context.Background(), w.cfg, opts(w)); err == nil || !strings.Contains(err.Error(), "nothing to roll back to") {
		t.Fatalf("second rollback: %v, want nothing to roll back to", err)
	}
	h, _ := production.History(w.cfg.Path)
	if len(h) != 2 {
		t.Fatalf("history has %d records, want 2", len(h))
	}
}

func title(j *journal.Journal) string {
	if len(j.Entries) == 0 {
		return ""
	}
	return j.Entries[0].Title
}

func refusedOn(err error, field string) bool {
	var re *activation.RefusedError
	return errors.As(err, &re) && re.Field == field
}

// Every way the evidence stops matching what would run is refused before
// anything starts, naming the field.
func TestStaleOrMismatchingEvidenceRefusedNamingTheField(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	now := time.Now()
	check := func(field string) {
		t.Helper()
		_, err := activation.Check(context.Background(), w.cfg, evPath, now, activation.Accept{})
		if !refusedOn(err, field) {
			t.Fatalf("err = %v, want refused on %s", err, field)
		}
	}
	if _, err := activation.Check(context.Background(), w.cfg, evPath, now, activation.Accept{}); err != nil {
		t.Fatalf("fresh evidence refused: %v", err)
	}

	// Too old.
	now = time.Now().Add(8 * 24 * time.Hour)
	check("finished_at")
	now = time.Now()

	// The plan was edited after the campaign.
	plan := filepath.Join(w.dir, "plan.toml")
	orig, _ := os.ReadFile(plan)
	must(t, os.WriteFile(plan, append(orig, []byte("# edited\n")...), 0o644))
	check("fingerprints.plan")
	must(t, os.WriteFile(plan, orig, 0o644))

	// The candidate profile was edited.
	cfgOrig, _ := os.ReadFile(w.cfgPath)
	must(t, os.WriteFile(w.cfgPath, []byte(strings.Replace(string(cfgOrig), `model = "cand-model"`+"\nexclusive", `model = "cand-model"`+"\ninherit_env = [\"HOME\"]\nexclusive", 1)), 0o644))
	w.load()
	check("fingerprints.candidate_profile")
	must(t, os.WriteFile(w.cfgPath, cfgOrig, 0o644))
	w.load()

	// Stale: production's launcher changed since the comparison.
	launcher := filepath.Join(w.dir, "prod-launcher.sh")
	lorig, _ := os.ReadFile(launcher)
	must(t, os.WriteFile(launcher, []byte("#!/bin/sh\n# another launcher\n"), 0o755))
	check("production.config_hash_before")
	must(t, os.WriteFile(launcher, lorig, 0o755))

	// What the variant ran was tampered with in the evidence.
	var ev evidence.Evidence
	b, _ := os.ReadFile(evPath)
	must(t, json.Unmarshal(b, &ev))
	for gi := range ev.Gates {
		for ai := range ev.Gates[gi].Attempts {
			if a := &ev.Gates[gi].Attempts[ai]; a.ReachedReady {
				a.Effective.Args = append(a.Effective.Args, "--extra")
			}
		}
	}
	tampered := filepath.Join(t.TempDir(), evidence.PrivateFile)
	writeSigned(t, tampered, &ev)
	if _, err := activation.Check(context.Background(), w.cfg, tampered, now, activation.Accept{}); !refusedOn(err, "gates[launch].attempts[no-exit].effective.profile_hash") {
		t.Fatalf("tampered effective profile: %v", err)
	}
	// Not qualified.
	ev.Verdict = evidence.VerdictNotQualified
	writeSigned(t, tampered, &ev)
	if _, err := activation.Check(context.Background(), w.cfg, tampered, now, activation.Accept{}); !refusedOn(err, "verdict") {
		t.Fatalf("not qualified: %v", err)
	}

	// Stale: production is no longer the one compared against.
	must(t, production.Append(&production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: w.cfg.Path,
		From: production.Snap(w.cfg.Backends["prod"], "", production.SourceConfiguration), To: production.Snap(w.cfg.Backends["prod"], "tuned", "")}))
	// The record's production hashes differently from what the campaign saw.
	h, _ := production.History(w.cfg.Path)
	h[0].To.Profile.Args = append(h[0].To.Profile.Args, "--tuned")
	h[0].To.ConfigHash, _ = production.ConfigHash(h[0].To.Profile)
	must(t, production.Rewrite(h[0]))
	w.load()
	check("production.config_hash_before")

	// The command says it too, with exit 1, and starts nothing.
	code, out := w.hiro("activate", evPath, "--journal", "")
	if code != 1 || !strings.Contains(out, "production.config_hash_before") || !strings.Contains(out, "stale") {
		t.Fatalf("hiro activate: exit %d\n%s", code, out)
	}
	if _, ok := w.running("cand"); ok {
		t.Fatal("a refused activation started the candidate")
	}
}

// A candidate that fails mid-switch (its port taken by another process
// after it qualified): the exclusive switch had stopped production first;
// production is put back and verified, and stays production.
func TestCandidateFailsMidSwitchOldProductionBackAndVerified(t *testing.T) {
	w := newWorld(t, true)
	w.startProduction()
	evPath := w.qualify()
	if !w.ready("prod") {
		t.Fatal("the campaign did not restore production")
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(w.candPort))
	must(t, err)
	defer l.Close()

	out, err := activation.Activate(context.Background(), w.cfg, evPath, opts(w))
	if err != nil {
		t.Fatalf("activate: %v", err)
	}
	r := out.Record
	if out.ExitCode != activation.ExitRefused || r.Outcome != production.OutcomeFailed {
		t.Fatalf("exit %d outcome %s, want 1 failed", out.ExitCode, r.Outcome)
	}
	if !strings.Contains(r.Error, "port_in_use") {
		t.Fatalf("error %q, want the candidate's port_in_use", r.Error)
	}
	names := []string{}
	for _, s := range r.Steps {
		names = append(names, s.Name)
	}
	if len(r.Steps) == 0 || r.Steps[0].Name != "stop old production prod" || !r.Steps[0].OK {
		t.Fatalf("steps %v: the exclusive switch must stop the old production first", names)
	}
	if r.Restored == nil || !r.Restored.OK || r.Restored.Reply != "READY" || r.Restored.Model != "prod-model" {
		t.Fatalf("old production not put back and verified: %+v", r.Restored)
	}
	if !w.ready("prod") {
		t.Fatal("prod is not serving")
	}
	if a, _ := production.Resolve(w.cfg); a.Name != "prod" {
		t.Fatalf("production is %s after a failed switch", a.Name)
	}
	j, err := journal.Load(w.journal)
	must(t, err)
	if !strings.Contains(title(j), "Production stays prod") {
		t.Fatalf("journal: %q", title(j))
	}
	if s := j.Entries[0].Summary; !strings.HasPrefix(s, "The switch stopped after its action ") || !strings.Contains(s, r.Error[:min(20, len(r.Error))]) ||
		!strings.Contains(s, `prod serves (health`) {
		t.Fatalf("journal summary %q: want the failed step, the error %q and prod's proof", s, r.Error)
	}
	if ins, _ := production.Intents(); len(ins) != 0 {
		t.Fatalf("intent left behind: %+v", ins[0])
	}
}

// Two activations at once: one switches, the other is refused (the
// production lock), whatever the timing.
func TestTwoActivationsAtOnceOneRefused(t *testing.T) {
	w := newWorld(t, false, "--load-time", "1500ms")
	w.startProduction()
	evPath := w.qualify()
	type res struct {
		code int
		out  string
	}
	results := make([]res, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, o := w.hiro("activate", evPath, "--journal", "")
			results[i] = res{c, o}
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, r := range results {
		switch {
		case r.code == 0:
			ok++
		case r.code == exitcode.Busy && strings.Contains(r.out, "production is held by hiro pid"):
			refused++
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("want one switched and one refused by the lock:\n[exit %d] %s\n[exit %d] %s", results[0].code, results[0].out, results[1].code, results[1].out)
	}
	if a, _ := production.Resolve(w.cfg); a.Name != "cand" {
		t.Fatalf("production is %s", a.Name)
	}
	h, _ := production.History(w.cfg.Path)
	if len(h) != 1 {
		t.Fatalf("%d records, want 1", len(h))
	}
}

// SIGKILL of hiro in the middle of an exclusive switch (old production
// stopped, candidate loading): the next hiro command, whatever it is,
// stops the candidate, puts the old production back verified, and records
// it.
func TestSIGKILLDuringSwitchNextCommandRecovers(t *testing.T) {
	w := newWorld(t, true, "--load-time", "4s")
	w.startProduction()
	evPath := w.qualify()
	cmd := w.hiroCmd("activate", evPath, "--journal", "")
	must(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, candUp := w.running("cand")
		_, prodUp := w.running("prod")
		ins, _ := production.Intents()
		if candUp && !prodUp && len(ins) == 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the switch never reached the candidate's start (cand %v prod %v intents %d)", candUp, prodUp, len(ins))
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	code, out := w.hiro("backend", "status")
	if code != 0 {
		t.Fatalf("next command: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "switch settled") {
		t.Fatalf("the next command did not settle the switch:\n%s", out)
	}
	if !w.ready("prod") {
		t.Fatalf("prod is not back:\n%s", out)
	}
	if _, ok := w.running("cand"); ok {
		t.Fatal("the candidate left by the killed switch still runs")
	}
	if ins, _ := production.Intents(); len(ins) != 0 {
		t.Fatal("the switch intent is still there")
	}
	h, _ := production.History(w.cfg.Path)
	if len(h) != 1 || h[0].Outcome != production.OutcomeRecovered || h[0].Restored == nil || !h[0].Restored.OK {
		t.Fatalf("history %+v, want one recovered record with the restore", h)
	}
	if a, _ := production.Resolve(w.cfg); a.Name != "prod" {
		t.Fatalf("production is %s", a.Name)
	}
}

// A campaign holding production (its lease) keeps activations off it:
// refused, naming the campaign, nothing started.
func TestActivationRefusedWhileACampaignHoldsProduction(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	dir, err := lease.Dir()
	must(t, err)
	h, err := lease.Acquire(dir, &lease.Lease{Kind: lease.KindCampaign, Campaign: "20261130T120000Z-other", Config: w.cfg.Path, Production: "prod"},
		lease.ProductionKey(w.cfg.Backends["prod"].BaseURL), lease.AcceleratorKey)
	must(t, err)
	defer h.Release()
	_, err = activation.Activate(context.Background(), w.cfg, evPath, opts(w))
	var re *activation.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "20261130T120000Z-other") {
		t.Fatalf("err = %v, want a refusal naming the campaign", err)
	}
	if _, ok := w.running("cand"); ok {
		t.Fatal("a refused activation started the candidate")
	}
	if ins, _ := production.Intents(); len(ins) != 0 {
		t.Fatal("a refused activation left an intent")
	}
}

// SIGKILL of hiro after the switch was committed (the new production
// verified and recorded, the old one being stopped: it ignores SIGTERM, so
// the stop waits out its grace): the next command keeps the new
// production, verified, and finishes stopping the old one.
func TestSIGKILLAfterCommitNextCommandFinishesTheSwitch(t *testing.T) {
	w := newWorldWith(t, false, []string{"--ignore-sigterm"})
	w.startProduction()
	evPath := w.qualify()
	cmd := w.hiroCmd("activate", evPath, "--journal", "")
	must(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for {
		ins, _ := production.Intents()
		if len(ins) == 1 && ins[0].Committed {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the switch never committed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	code, out := w.hiro("backend", "status")
	if code != 0 || !strings.Contains(out, "switch settled") {
		t.Fatalf("next command: exit %d\n%s", code, out)
	}
	if a, _ := production.Resolve(w.cfg); a.Name != "cand" {
		t.Fatalf("production is %s, want the committed cand", a.Name)
	}
	if !w.ready("cand") {
		t.Fatal("cand is not serving")
	}
	if _, ok := w.running("prod"); ok {
		t.Fatal("the old production still runs")
	}
	h, _ := production.History(w.cfg.Path)
	if len(h) != 2 || h[1].Outcome != production.OutcomeRecovered || h[1].Verified == nil || !h[1].Verified.OK {
		t.Fatalf("history %+v, want the switch and its recovery", h)
	}
}

// The recovery of a killed switch holds production's lease while it puts
// production back: a 'hiro backend start prod' racing it is refused with
// exit 1 naming the holder, and starts nothing beside the restore.
func TestSwitchRecoveryHoldsProductionLease(t *testing.T) {
	w := newWorldWith(t, true, []string{"--load-time", "3s"}, "--load-time", "4s")
	w.startProduction()
	evPath := w.qualify()
	cmd := w.hiroCmd("activate", evPath, "--journal", "")
	must(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, candUp := w.running("cand")
		_, prodUp := w.running("prod")
		ins, _ := production.Intents()
		if candUp && !prodUp && len(ins) == 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the switch never reached the candidate's start (cand %v prod %v intents %d)", candUp, prodUp, len(ins))
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	// The next command recovers: production loads for 3 s meanwhile.
	rec := w.hiroCmd("backend", "status")
	var recOut strings.Builder
	rec.Stdout, rec.Stderr = &recOut, &recOut
	must(t, rec.Start())
	dir, err := lease.Dir()
	must(t, err)
	key := lease.ProductionKey(w.cfg.Backends["prod"].BaseURL)
	deadline = time.Now().Add(20 * time.Second)
	for lease.HeldBy(dir, key) == nil || lease.HeldBy(dir, key).PID != rec.Process.Pid {
		if time.Now().After(deadline) {
			rec.Process.Kill()
			rec.Wait()
			t.Fatalf("the recovery never held production's lease:\n%s", recOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out := w.hiro("backend", "start", "prod")
	if code != exitcode.Busy || !strings.Contains(out, "is held by") {
		t.Errorf("backend start prod during the recovery: exit %d, want %d (busy) naming the holder\n%s", code, exitcode.Busy, out)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("recovery: %v\n%s", err, recOut.String())
	}
	if !strings.Contains(recOut.String(), "switch settled") || !w.ready("prod") {
		t.Fatalf("the recovery did not put prod back:\n%s", recOut.String())
	}
	if h, _ := production.History(w.cfg.Path); len(h) != 1 || h[0].Outcome != production.OutcomeRecovered {
		t.Fatalf("history %+v, want one recovered record", h)
	}
}

// TestInconclusiveRefusedUnlessAccepted: an inconclusive campaign (no
// gate failed, a comparison could not decide) is refused on its verdict,
// saying how to proceed; with Accept.Inconclusive it activates, and the
// record and the journal entry say it was accepted.
func TestInconclusiveRefusedUnlessAccepted(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	var ev evidence.Evidence
	b, _ := os.ReadFile(evPath)
	must(t, json.Unmarshal(b, &ev))
	ev.Verdict, ev.ExitCode = evidence.VerdictInconclusive, 5
	ev.TerminationReason = "no gate failed, but 1 gate's comparison could not decide (ready inconclusive)"
	ev.Gates[len(ev.Gates)-1].Status = evidence.StatusInconclusive
	inc := filepath.Join(t.TempDir(), evidence.PrivateFile)
	writeSigned(t, inc, &ev) // as hiro would write an inconclusive campaign
	_, err := activation.Check(context.Background(), w.cfg, inc, time.Now(), activation.Accept{})
	if !refusedOn(err, "verdict") || !strings.Contains(err.Error(), "is inconclusive") || !strings.Contains(err.Error(), "--accept-inconclusive") {
		t.Fatalf("inconclusive evidence: %v, want refused on verdict naming --accept-inconclusive", err)
	}
	// A hand-edited exit code still contradicts the verdict.
	ev.ExitCode = 0
	bad := filepath.Join(t.TempDir(), evidence.PrivateFile)
	writeSigned(t, bad, &ev)
	if _, err := activation.Check(context.Background(), w.cfg, bad, time.Now(), activation.Accept{Inconclusive: true}); !refusedOn(err, "exit_code") {
		t.Fatalf("inconclusive evidence exiting 0: %v, want refused on exit_code", err)
	}
	o := opts(w)
	o.Accept.Inconclusive = true
	out, err := activation.Activate(context.Background(), w.cfg, inc, o)
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("accepted inconclusive activation: %v", err)
	}
	if len(out.Record.Accepted) != 1 || !strings.Contains(out.Record.Accepted[0], "--accept-inconclusive") {
		t.Fatalf("record accepted %q", out.Record.Accepted)
	}
	j, err := journal.Load(w.journal)
	must(t, err)
	if len(j.Entries) != 1 || !strings.Contains(j.Entries[0].Summary, "accepted evidence that could not decide") || j.Entries[0].Validation[0].Status != journal.StatusInconclusive {
		t.Fatalf("journal entry %+v", j.Entries)
	}
}

// An exclusive activation is predicted before the old production stops:
// on a host whose CPU lacks AVX2 the llama.cpp candidate is refused,
// nothing stopped; --no-preflight (NoPreflight) switches anyway.
func TestActivatePreflightRefusesBeforeStopping(t *testing.T) {
	w := newWorld(t, true)
	w.startProduction()
	evPath := w.qualify()
	o := opts(w)
	o.HostFacts = &preflight.Host{Source: "a host without AVX2", Arch: "amd64", CPUFlags: []string{"sse2", "avx"}}
	_, err := activation.Activate(context.Background(), w.cfg, evPath, o)
	var re *activation.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "rule llamacpp/cpu-avx2") || !strings.Contains(err.Error(), "nothing was stopped") {
		t.Fatalf("want a preflight refusal, got %v", err)
	}
	if !w.ready("prod") {
		t.Fatal("production was stopped for a switch predicted to fail")
	}
	if _, ok := w.running("cand"); ok {
		t.Fatal("the candidate was started")
	}
	o.NoPreflight = true
	out, err := activation.Activate(context.Background(), w.cfg, evPath, o)
	if err != nil || out.ExitCode != activation.ExitSwitched {
		t.Fatalf("--no-preflight: %v %+v", err, out)
	}
}

// TestActivationPolicyNamesEachMissingKind: under the default policy
// (artifact, ready_control, structured_control, semantic) the test
// campaign (launch and READY control only) is refused on
// activation.require, naming each missing kind; a semantic gate of an
// older schema (no intervals) satisfies the policy only when older
// evidence is accepted, which the record keeps; a shadow gate stands in
// for semantic.
func TestActivationPolicyNamesEachMissingKind(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	cfgText, _ := os.ReadFile(w.cfgPath)
	setRequire := func(line string) {
		t.Helper()
		s := strings.Replace(string(cfgText), `require = ["launch", "ready_control"]`, line, 1)
		must(t, os.WriteFile(w.cfgPath, []byte(s), 0o644))
		w.load()
	}
	setRequire("")
	_, err := activation.Check(context.Background(), w.cfg, evPath, time.Now(), activation.Accept{})
	if !refusedOn(err, "activation.require") {
		t.Fatalf("default policy: %v, want refused on activation.require", err)
	}
	for _, want := range []string{"artifact: the campaign has no artifact gate", "structured_control: the campaign has no structured_control gate", "semantic: the campaign has no semantic gate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ready_control:") {
		t.Errorf("the passed READY control is named missing: %v", err)
	}
	// An older semantic gate, passed but without intervals.
	setRequire(`require = ["ready_control", "semantic"]`)
	var ev evidence.Evidence
	b, _ := os.ReadFile(evPath)
	must(t, json.Unmarshal(b, &ev))
	ev.Gates = append(ev.Gates, evidence.Gate{ID: "semantic", Kind: "semantic", Status: evidence.StatusPassed, Semantic: &evidence.SemanticResult{Passed: true}})
	older := filepath.Join(t.TempDir(), evidence.PrivateFile)
	writeSigned(t, older, &ev)
	if _, err := activation.Check(context.Background(), w.cfg, older, time.Now(), activation.Accept{}); !refusedOn(err, "activation.require") || !strings.Contains(err.Error(), "--accept-older-evidence") {
		t.Fatalf("older semantic gate: %v, want refused naming --accept-older-evidence", err)
	}
	q, err := activation.Check(context.Background(), w.cfg, older, time.Now(), activation.Accept{OlderEvidence: true})
	if err != nil || len(q.Accepted) != 1 || !strings.Contains(q.Accepted[0], "older evidence without intervals") {
		t.Fatalf("accepted older evidence: %v, accepted %q", err, q.Accepted)
	}
	// A shadow gate satisfies semantic.
	ev.Gates[len(ev.Gates)-1] = evidence.Gate{ID: "shadow", Kind: "shadow", Status: evidence.StatusPassed}
	shadow := filepath.Join(t.TempDir(), evidence.PrivateFile)
	writeSigned(t, shadow, &ev)
	if _, err := activation.Check(context.Background(), w.cfg, shadow, time.Now(), activation.Accept{}); err != nil {
		t.Fatalf("shadow in place of semantic: %v", err)
	}
}

// TestEnvironmentChangeRefusedNamingTheField: the campaign records the
// engine's build and the accelerator stack; evidence of another engine
// binary or another GPU driver is refused, naming the field.
func TestEnvironmentChangeRefusedNamingTheField(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	var ev evidence.Evidence
	b, _ := os.ReadFile(evPath)
	must(t, json.Unmarshal(b, &ev))
	env := ev.Fingerprints.Environment
	if env == nil || !strings.HasPrefix(env.EngineBuild, "sha256:") {
		t.Fatalf("environment not recorded: %+v", env)
	}
	for field, edit := range map[string]func(*evidence.Environment){
		"fingerprints.environment.engine_build": func(e *evidence.Environment) { e.EngineBuild = "sha256:0000" },
		"fingerprints.environment.driver":       func(e *evidence.Environment) { e.Driver = "535.104.05" },
	} {
		changed := *env
		edit(&changed)
		ev.Fingerprints.Environment = &changed
		p := filepath.Join(t.TempDir(), evidence.PrivateFile)
		writeSigned(t, p, &ev)
		if _, err := activation.Check(context.Background(), w.cfg, p, time.Now(), activation.Accept{}); !refusedOn(err, field) {
			t.Errorf("changed %s: %v", field, err)
		}
	}
}

// TestSwitchJournalSlugTakenGetsSuffix (issue 26 G11): another
// configuration file naming the same production shares the state_dir,
// so its journal, but counts its switches itself: its "activate 1
// switched" entry is there already. This switch's entry is written all
// the same, under the slug with a suffix (it was lost: "slug ... already
// in the journal" on stderr, exit 0).
func TestSwitchJournalSlugTakenGetsSuffix(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	must(t, os.MkdirAll(w.journal, 0o755))
	j, err := journal.Load(w.journal)
	must(t, err)
	other := &journal.Entry{Timestamp: time.Now().UTC().Add(-time.Hour).Truncate(time.Second), Slug: "production-activate-1-switched",
		Title: "Production switched from prod to weak on the evidence of campaign other", Summary: "Another configuration's switch.",
		CurrentState: "weak is production."}
	if _, err := j.Create(other); err != nil {
		t.Fatalf("seeding the other configuration's entry: %v", err)
	}
	out, err := activation.Activate(context.Background(), w.cfg, evPath, opts(w))
	if err != nil || out.Record.Seq != 1 {
		t.Fatalf("activate: %v (%+v)", err, out)
	}
	if !strings.HasSuffix(out.Journal, "_production-activate-1-switched-2.json") {
		t.Fatalf("the switch's journal entry is %q, want one with the slug production-activate-1-switched-2", out.Journal)
	}
	j, err = journal.Load(w.journal)
	must(t, err)
	if len(j.Entries) != 2 || j.Find("production-activate-1-switched-2") == nil || !strings.HasPrefix(j.Find("production-activate-1-switched-2").Title, "Production switched from prod to cand") {
		t.Fatalf("journal has %d entries (newest %q); want the other's and this switch's", len(j.Entries), title(j))
	}
}

// Trial 11 R8: after activation 1 (prod to cand), rollback 2 (back to
// prod) and a failed activation 3, rollback refuses saying what the last
// switch did (rollback 2 replaced cand, undoing activation 1) and why
// nothing is left to return to; it used to say that prod (rollback 2)
// "replaced no earlier production". The records are written directly:
// nothing starts.
func TestRollbackRefusalSaysWhatTheRollbackReplaced(t *testing.T) {
	w := newWorld(t, false)
	prod := production.Snap(w.cfg.Backends["prod"], "", production.SourceConfiguration)
	cand := production.Snap(w.cfg.Backends["cand"], "", "")
	recs := []*production.Record{
		{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: w.cfg.Path, From: prod, To: cand,
			Campaign: "20261203T150913Z-cand-abc123", RollbackTo: prod},
		{Kind: production.KindRollback, Outcome: production.OutcomeSwitched, Config: w.cfg.Path,
			From: production.Snap(w.cfg.Backends["cand"], "", "activation 1"), To: production.Snap(w.cfg.Backends["prod"], "", ""), Undid: 1},
		{Kind: production.KindActivate, Outcome: production.OutcomeFailed, Config: w.cfg.Path,
			From: production.Snap(w.cfg.Backends["prod"], "", "rollback 2"), To: production.Snap(w.cfg.Backends["cand"], "", ""),
			Campaign: "20261203T150913Z-cand-abc123", Error: "stopped"},
	}
	for _, r := range recs {
		must(t, production.Append(r))
	}
	_, err := activation.Rollback(context.Background(), w.cfg, opts(w))
	var re *activation.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("rollback: %v, want refused", err)
	}
	want := "nothing to roll back to: prod came back by rollback 2, which undid activation 1 and replaced cand; " +
		"prod is the production this configuration had before any activation, so there is none earlier to return to " +
		"(a rollback is not undone by another): to switch to cand again, activate its evidence " +
		"('hiro activate EVIDENCE', as activation 1 did with campaign 20261203T150913Z-cand-abc123)"
	if re.Msg != want {
		t.Fatalf("refusal:\n%s\nwant:\n%s", re.Msg, want)
	}
	if h, _ := production.History(w.cfg.Path); len(h) != 3 {
		t.Fatalf("history has %d records after the refusal, want 3", len(h))
	}
}
