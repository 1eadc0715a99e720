package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// demoRamp is a ramp reversed at 25 %: three minutes at 1, 5 and 25 %,
// looks every 5 s, the candidate failing half its requests in the last
// 15 s.
func demoRamp() *evidence.RampResult {
	t0 := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	r := &evidence.RampResult{Candidate: "qwen-next", Production: "qwen", Steps: []float64{0.01, 0.05, 0.25, 1}, Soak: "1m0s", MinRequests: 150,
		State: evidence.RampReversed, Step: 2, Reason: "reversed at 25 %: error_rate: candidate 0.500", StartedAt: t0}
	shares := []float64{0.01, 0.05, 0.25}
	for i := 1; i <= 36; i++ {
		at := t0.Add(time.Duration(5*i) * time.Second)
		share := shares[min(2, (i-1)/12)]
		cr := int(share * 200)
		p := evidence.RampPoint{At: at, Share: share, CandidateRequests: cr, ProductionRequests: 200 - cr, ProductionErrors: i % 7 / 6}
		if i%12 == 0 && i < 36 {
			p.Share = shares[i/12]
		}
		if i > 33 {
			p.CandidateErrors = cr / 2
		}
		if i == 36 {
			p.Share = 0
		}
		r.Series = append(r.Series, p)
	}
	end := t0.Add(180 * time.Second)
	r.EndedAt = &end
	for k, share := range shares {
		from, to := t0.Add(time.Duration(60*k)*time.Second), t0.Add(time.Duration(60*k+60)*time.Second)
		r.History = append(r.History, evidence.RampStep{Share: share, StartedAt: from, EndedAt: &to, Decision: evidence.RampAdvance})
	}
	r.History[2].Decision = evidence.RampReverse
	return r
}

// TestRampEntryShowsChart: an entry holding a ramp gets one picture of
// it (share and both error rates), its caption naming the end; an entry
// whose ramp has no series (an older record) gets none.
func TestRampEntryShowsChart(t *testing.T) {
	page, _ := buildRampEntry(t, demoRamp())
	if n := strings.Count(page, `<figure class="chart">`); n != 1 {
		t.Fatalf("%d charts on the page, want 1", n)
	}
	for _, want := range []string{"Progressive ramp: share and error rate over time", "candidate error rate", "production error rate",
		"candidate&#39;s share", "the ramp reversed (reversed at 25 %: error_rate: candidate 0.500)", "36 looks", "over 3.0 minutes", "was 0.500"} {
		if !strings.Contains(page, want) {
			t.Errorf("the ramp's picture lacks %q", want)
		}
	}
	old := demoRamp()
	old.Series = nil
	if page, _ := buildRampEntry(t, old); strings.Contains(page, `<figure class="chart">`) {
		t.Error("a ramp without a series is drawn")
	}
}

// TestBrowserRampChart: Chromium draws the ramp's picture as SVG; with
// HIRO_SCREENSHOT_DIR set the page is also saved there as a PNG for a
// person to look at.
func TestBrowserRampChart(t *testing.T) {
	bin := chromiumPath(t)
	_, file := buildRampEntry(t, demoRamp())
	dom := dumpDOM(t, bin, file)
	if n := strings.Count(dom, "<svg"); n != 1 {
		t.Errorf("%d svg elements in the DOM, want 1", n)
	}
	if dir := os.Getenv("HIRO_SCREENSHOT_DIR"); dir != "" {
		screenshot(t, bin, file, filepath.Join(dir, "ramp-entry.png"))
	}
}

// buildRampEntry builds a journal of one activation entry holding r and
// returns its page and the page's file.
func buildRampEntry(t *testing.T, r *evidence.RampResult) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "journal")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &Entry{Timestamp: r.EndedAt.Truncate(time.Second), Slug: "production-activate-2-failed", Title: "Production stays qwen: the progressive activation of qwen-next was reversed",
		Sections: []Section{{Title: "Progressive ramp", Status: "Failed", Items: []string{"1 % of production's requests to qwen-next: advance"}}}, Ramp: r}
	if _, err := j.Create(e); err != nil {
		t.Fatal(err)
	}
	if j, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(t.TempDir(), "site")
	if _, err := Build(j, site, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(site, "entries", e.Slug+".html")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), file
}
