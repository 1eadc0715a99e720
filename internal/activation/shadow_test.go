package activation_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// shadowPlan writes a plan whose last gate qualifies the candidate on
// the router's live traffic (150 pairs, all requests mirrored).
func (w *world) shadowPlan() string { return w.shadowPlanFor("2m") }

// shadowPlanFor is shadowPlan with the gate's time bound.
func (w *world) shadowPlanFor(bound string) string {
	p := filepath.Join(w.dir, "plan-shadow.toml")
	must(w.t, os.WriteFile(p, []byte(`title = "Candidate on live traffic"
config = "hiro.toml"
candidate = "cand"
evidence_dir = "evidence"

[[gates]]
id = "launch"
kind = "launch"
[[gates.variants]]
name = "no-exit"
reason = "documented fallback: run without the exit flag"
args_remove = ["--exit"]

[[gates]]
id = "ready"
kind = "ready_control"

[[gates]]
id = "shadow"
kind = "shadow"
share = 1.0
max_pairs = 150
min_pairs = 150
queue_size = 256
for = "`+bound+`"
`), 0o644))
	return p
}

// newestEvidence reads the campaign's private evidence (the newest).
func (w *world) newestEvidence() (string, *evidence.Evidence) {
	w.t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(w.dir, "evidence", "*", evidence.PrivateFile))
	if len(dirs) == 0 {
		w.t.Fatal("no evidence written")
	}
	path := dirs[len(dirs)-1]
	b, err := os.ReadFile(path)
	must(w.t, err)
	var e evidence.Evidence
	must(w.t, json.Unmarshal(b, &e))
	return path, &e
}

// A campaign with a shadow gate while `hiro serve` serves production
// under load: the router mirrors production's live requests to the
// candidate the campaign launched, the gate passes on 150 scored pairs,
// the evidence says so (pair records in the private copy only), `hiro
// activate` accepts it, and no client request fails or waits for a 503.
func TestShadowCampaignQualifiesOnLiveTrafficAndActivates(t *testing.T) {
	w := newWorld(t, false)
	// The policy asks for extraction quality against production: the
	// shadow gate satisfies "semantic".
	b, err := os.ReadFile(w.cfgPath)
	must(t, err)
	policy := strings.Replace(string(b), `require = ["launch", "ready_control"]`, `require = ["launch", "ready_control", "semantic"]`, 1)
	if policy == string(b) {
		t.Fatal("the world's configuration has no [activation] require line to extend")
	}
	must(t, os.WriteFile(w.cfgPath, []byte(policy), 0o644))
	w.load()
	w.startProduction()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	l := startLoad(url, 4, 4)
	l.waitMore(t, 20)
	code, out := w.hiro("qualify", w.shadowPlan())
	if code != 0 || !strings.Contains(out, "mirrors 100 % of production prod's requests to cand (on this machine)") {
		l.finish()
		t.Fatalf("qualify: exit %d\n%s", code, out)
	}
	evPath, ev := w.newestEvidence()
	g := ev.Gates[len(ev.Gates)-1]
	if g.Kind != "shadow" || g.Status != evidence.StatusPassed || g.Shadow == nil {
		l.finish()
		t.Fatalf("shadow gate: %+v", g)
	}
	if s := g.Shadow; s.Pairs != 150 || s.Text.Pairs != 150 || s.CandidateErrors != 0 || s.Ended != "max_pairs" || len(s.PairRecords) != 150 || s.Outcome != "passed" {
		t.Errorf("shadow result: %s (pairs %d, text %d, ended %q, records %d)", s.Summary, s.Pairs, s.Text.Pairs, s.Ended, len(s.PairRecords))
	}
	pub, err := os.ReadFile(filepath.Join(filepath.Dir(evPath), evidence.PublicFile))
	must(t, err)
	if !strings.Contains(string(pub), `"shadow"`) || strings.Contains(string(pub), "pair_records") || strings.Contains(string(pub), "request_sha256") {
		t.Errorf("public evidence: shadow result missing or pair records present")
	}
	code, out = w.hiro("activate", evPath, "--journal", "")
	if code != 0 {
		l.finish()
		t.Fatalf("activate: exit %d\n%s", code, out)
	}
	if p := sp.production(t); p != "cand" {
		t.Fatalf("the router serves %s after the activation", p)
	}
	l.waitMore(t, 20)
	l.finish()
	t.Logf("requests through the router: %s", l)
	if len(l.failed) > 0 || len(l.retry503) > 0 {
		t.Fatalf("client requests failed during the shadow campaign: %s", l)
	}
}

// A candidate that answers every other request 503 (hiro's own requests
// retry and pass the controls) fails the shadow gate on its success rate;
// production's clients see none of it.
func TestShadowCampaignFailsACandidateThatErrs(t *testing.T) {
	w := newWorld(t, false, "--overload-status", "503", "--overload-every", "2")
	w.startProduction()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	l := startLoad(url, 4, 4)
	l.waitMore(t, 20)
	code, out := w.hiro("qualify", w.shadowPlan())
	l.finish()
	if code != 1 {
		t.Fatalf("qualify: exit %d, want 1 (not qualified)\n%s", code, out)
	}
	_, ev := w.newestEvidence()
	g := ev.Gates[len(ev.Gates)-1]
	if g.Kind != "shadow" || g.Status != evidence.StatusFailed || g.Shadow == nil || g.Shadow.CandidateErrors < 10 || !strings.Contains(g.Reason, "success_rate") {
		t.Fatalf("shadow gate: %s %s %+v", g.Status, g.Reason, g.Shadow)
	}
	if len(l.failed) > 0 || len(l.retry503) > 0 {
		t.Fatalf("client requests failed: %s", l)
	}
}

// A shadow gate for a candidate that needs the accelerator alone is a
// plan error: --check says shadow is impossible on one machine and names
// what works.
func TestShadowGateRefusedForAnExclusiveCandidate(t *testing.T) {
	w := newWorld(t, true)
	code, out := w.hiro("qualify", "--check", w.shadowPlan())
	if code != 2 || !strings.Contains(out, "shadow traffic is impossible on one machine") || !strings.Contains(out, "semantic gate") || !strings.Contains(out, "second machine") {
		t.Fatalf("qualify --check: exit %d\n%s", code, out)
	}
}

// With no client traffic the shadow run ends at its time bound with no
// pairs: the gate is inconclusive (exit 5), not passed and not failed.
func TestShadowCampaignWithoutTrafficIsInconclusive(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	code, out := w.hiro("qualify", w.shadowPlanFor("3s"))
	if code != 5 {
		t.Fatalf("qualify: exit %d, want 5 (inconclusive)\n%s", code, out)
	}
	_, ev := w.newestEvidence()
	g := ev.Gates[len(ev.Gates)-1]
	if g.Status != evidence.StatusInconclusive || ev.Verdict != evidence.VerdictInconclusive || g.Shadow == nil || g.Shadow.Pairs != 0 || g.Shadow.Ended != "duration" || !strings.Contains(g.Reason, "fewer than the 150") {
		t.Fatalf("shadow gate: %s %q verdict %s %+v", g.Status, g.Reason, ev.Verdict, g.Shadow)
	}
}
