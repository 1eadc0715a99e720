package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// TestBrowserDocumentsChartReadable (issue 26 F14): the demo's shape, a
// semantic gate over 48 documents, laid out by Chromium at 1280 and
// 390 px wide: the per-document chart is drawn at 80 % of its size or
// more (it was 13 % at 1280, a 40 px sliver) and its rows are 12 px or
// more apart, as are its document names' 10-point letters at 9 px or
// more; and at 1280 no chart of the page is shrunk below 90 %, at 390
// none below 80 % (it scrolls in its figure instead: issue 26 T8).
func TestBrowserDocumentsChartReadable(t *testing.T) {
	bin := chromiumPath(t)
	ev := demoEvidence()
	sr := ev.Gates[len(ev.Gates)-1].Semantic
	sr.Differences = nil
	for i := range 48 {
		d := evidence.DocDiff{DocID: fmt.Sprintf("document-%02d", i), CandidateF1: 0.8, ProductionF1: 0.8}
		if i%3 != 0 {
			d.CandidateF1, d.DeltaF1 = 0.8-float64(i)/100, -float64(i)/100
		}
		sr.Differences = append(sr.Differences, d)
	}
	page, site := publishDemo(t, ev)
	// A copy of the page beside it that writes, once laid out, each
	// chart's drawn width over its own (1 pt = 4/3 px) and the drawn
	// distance between two rows of the documents chart.
	probe := filepath.Join(site, "entries", "probe.html")
	script := `<script>addEventListener("load",()=>{const out=[];for(const f of document.querySelectorAll("figure.chart")){` +
		`const s=f.querySelector("svg"),vb=s.viewBox.baseVal,r=s.getBoundingClientRect(),k=r.width/(vb.width*4/3);` +
		`const cap=f.querySelector("figcaption strong").textContent;out.push(cap.slice(cap.indexOf(": ")+2,cap.indexOf(": ")+9)+"="+k.toFixed(3))}` +
		`document.title=out.join(";")})</script></body>`
	if err := os.WriteFile(probe, []byte(strings.Replace(page, "</body>", script, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1280, 390} {
		got := probeTitle(t, bin, probe, width)
		found := false
		for _, part := range strings.Split(got, ";") {
			name, v, _ := strings.Cut(part, "=")
			var k float64
			if _, err := fmt.Sscan(v, &k); err != nil {
				t.Fatalf("at %d px: probe wrote %q", width, got)
			}
			if strings.HasPrefix(name, "F1 ") {
				found = true
				// 14-point rows and 10-point names (account's documents chart).
				if row, letters := 14*4.0/3*k, 10*4.0/3*k; k < 0.8 || row < 12 || letters < 9 {
					t.Errorf("at %d px wide the documents chart is drawn at %.0f %% of its size: rows %.1f px apart, names %.1f px; want 80 %%, 12 and 9 or more", width, 100*k, row, letters)
				}
			} else if width == 1280 && k < 0.9 {
				t.Errorf("at 1280 px wide the chart %q is drawn at %.0f %% of its size; want 90 %% or more", name, 100*k)
			} else if k < 0.8 {
				// On a phone a chart scrolls in its figure rather than
				// shrink its 10-point letters below 11 px.
				t.Errorf("at %d px wide the chart %q is drawn at %.0f %% of its size; want 80 %% or more", width, name, 100*k)
			}
		}
		if !found {
			t.Errorf("at %d px: no documents chart among %q", width, got)
		}
	}
}
