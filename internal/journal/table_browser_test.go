package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// comparisonsEvidence is the demo's campaign with its semantic gate's
// comparisons (evidence v3): the measures table of nine columns, the one
// whose Decision column a 1280 px desktop hid behind a scrollbar.
func comparisonsEvidence() *evidence.Evidence {
	ev := demoEvidence()
	sr := ev.Gates[len(ev.Gates)-1].Semantic
	sr.Outcome = evidence.StatusFailed
	sr.Method = &evidence.StatMethod{Test: "paired bootstrap", Resamples: 10000, Confidence: 0.95, Power: 0.8, Seeding: "seeded"}
	sr.Comparisons = []evidence.Comparison{
		{Measure: "f1", Candidate: 0.769, Production: 0.848, Difference: -0.079, Lower: -0.131, Upper: -0.027, Margin: 0.05, Outcome: evidence.StatusInconclusive,
			Decision: "cannot tell", DocumentsNeeded: 1718, SampleSize: "With 48 documents a drop smaller than 0.061 cannot be told from noise."},
		{Measure: "grounding_rate", Candidate: 1, Production: 1, Margin: 0.05, Outcome: evidence.StatusPassed, Decision: "no worse"},
		{Measure: "schema_valid_rate", Candidate: 0.926, Production: 1, Difference: -0.074, Lower: -0.148, Upper: -0.037, Margin: 0.05, Outcome: evidence.StatusInconclusive,
			Decision: "cannot tell", DocumentsNeeded: 412},
	}
	return ev
}

// TestBrowserMeasuresTableFitsTheDesktop (issue 26 N3): Chromium lays out
// the entry page of a campaign with the nine-column measures table at
// 1280 px wide: every table of the page is shown whole (no scrollbar of
// its own, its Decision header inside the window); at 390 px the page
// itself does not scroll sideways (a wide table scrolls in its own box).
func TestBrowserMeasuresTableFitsTheDesktop(t *testing.T) {
	bin := chromiumPath(t)
	page, site := publishDemo(t, comparisonsEvidence())
	if !strings.Contains(page, "<th>Documents needed</th>") {
		t.Fatal("the page has no measures table")
	}
	// Once laid out, the probe writes the window's width, the page's
	// scroll width, each table's hidden width (scroll less client
	// width) and how far the measures table's Decision header reaches
	// past the right edge of the table's visible box (0 or less: shown).
	probe := filepath.Join(site, "entries", "probe.html")
	script := `<script>addEventListener("load",()=>{const out=["window="+innerWidth,"page="+document.documentElement.scrollWidth];` +
		`for(const tb of document.querySelectorAll("table")){const box=tb.closest(".table")||tb;out.push("hidden="+(box.scrollWidth-box.clientWidth))}` +
		`for(const th of document.querySelectorAll("th")){if(th.textContent==="Decision"&&th.parentElement.textContent.includes("Documents needed")){const box=th.closest(".table")||th.closest("table");out.push("decision="+Math.round(th.getBoundingClientRect().right-box.getBoundingClientRect().right))}}` +
		`document.title=out.join(";")})</script></body>`
	if err := os.WriteFile(probe, []byte(strings.Replace(page, "</body>", script, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1280, 390} {
		got := probeTitle(t, bin, probe, width)
		var win, pageW, decision, tables int
		found := false
		hidden := 0
		for _, part := range strings.Split(got, ";") {
			name, v, _ := strings.Cut(part, "=")
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatalf("at %d px: probe wrote %q", width, got)
			}
			switch name {
			case "window":
				win = n
			case "page":
				pageW = n
			case "decision":
				decision, found = n, true
			case "hidden":
				tables++
				hidden = max(hidden, n)
			}
		}
		if !found || tables == 0 {
			t.Fatalf("at %d px: no measures table laid out: %q", width, got)
		}
		if pageW > win {
			t.Errorf("at %d px the page scrolls sideways: %d px wide in a %d px window", width, pageW, win)
		}
		if width == 1280 {
			if hidden > 0 {
				t.Errorf("at 1280 px a table hides %d px behind its scrollbar (%s)", hidden, got)
			}
			if decision > 0 {
				t.Errorf("at 1280 px the measures table's Decision header ends %d px past the table's visible box", decision)
			}
		}
	}
}

// TestBrowserWorkBoxesAgreeWithTheirText (issue 26 Q10): on the wide page
// of the measures table, a gate's box (no table inside) is as wide as the
// prose it holds, not the page's 76rem with its bullets wrapped at
// 48rem: at 1280 px no box is more than its padding and indent wider
// than its widest bullet.
func TestBrowserWorkBoxesAgreeWithTheirText(t *testing.T) {
	bin := chromiumPath(t)
	page, site := publishDemo(t, comparisonsEvidence())
	probe := filepath.Join(site, "entries", "probe-boxes.html")
	script := `<script>addEventListener("load",()=>{const out=[];for(const w of document.querySelectorAll(".work")){if(w.querySelector("table"))continue;` +
		`let li=0;for(const l of w.querySelectorAll("li"))li=Math.max(li,l.getBoundingClientRect().width);` +
		`if(li>0)out.push(Math.round(w.getBoundingClientRect().width-li))}document.title=out.join(";")})</script></body>`
	if err := os.WriteFile(probe, []byte(strings.Replace(page, "</body>", script, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	got := probeTitle(t, bin, probe, 1280)
	if got == "" {
		t.Fatal("no gate box with bullets laid out")
	}
	// padding 1rem a side and the list's 1.2rem indent: 51 px at 16 px a rem
	for _, v := range strings.Split(got, ";") {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil || n > 60 {
			t.Errorf("a gate box is %s px wider than its widest bullet at 1280 px (boxes: %s): box and text disagree", v, got)
		}
	}
}

// TestBrowserProseAndNarrowTablesKeepTheirLine (findings13 T10, T11): on
// the wide page of the measures table, at 1280 px the "Decisions and
// reasoning" lines (dt) and the narrow tables (Validation's three
// columns, the reject reasons) keep the 48rem (768 px) line while the
// measures table is wider; at 390 px a reject-reasons table does not
// squeeze its Example column to a sliver: each row's Example takes the
// table's whole width (stacked under Reason and Count) and the table
// does not scroll sideways.
func TestBrowserProseAndNarrowTablesKeepTheirLine(t *testing.T) {
	bin := chromiumPath(t)
	page, site := publishDemo(t, comparisonsEvidence())
	if !strings.Contains(page, "<th>Example</th>") || !strings.Contains(page, `<dt class="plain">`) {
		t.Fatal("the page has no reject-reasons table or no decision line")
	}
	probe := filepath.Join(site, "entries", "probe-line.html")
	script := `<script>addEventListener("load",()=>{const w=e=>Math.round(e.getBoundingClientRect().width);const out=[];` +
		`for(const e of document.querySelectorAll("#decisions dt"))out.push("dt="+w(e));` +
		`out.push("validation="+w(document.querySelector("#validation .table")));` +
		`for(const tb of document.querySelectorAll("table")){const hs=[...tb.querySelectorAll("th")].map(h=>h.textContent);` +
		`if(hs.includes("Documents needed"))out.push("measures="+w(tb.closest(".table")||tb));` +
		`if(hs.includes("Example")){out.push("rejects="+w(tb));out.push("hidden="+(tb.scrollWidth-tb.clientWidth));for(const r of tb.tBodies[0].rows)out.push("example="+w(r.cells[2]))}}` +
		`document.title=out.join(";")})</script></body>`
	if err := os.WriteFile(probe, []byte(strings.Replace(page, "</body>", script, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1280, 390} {
		got := probeTitle(t, bin, probe, width)
		v := map[string][]int{}
		for _, part := range strings.Split(got, ";") {
			name, s, _ := strings.Cut(part, "=")
			var n int
			if _, err := fmt.Sscan(s, &n); err != nil {
				t.Fatalf("at %d px: probe wrote %q", width, got)
			}
			v[name] = append(v[name], n)
		}
		if len(v["dt"]) == 0 || len(v["example"]) == 0 || len(v["measures"]) == 0 {
			t.Fatalf("at %d px: probe wrote %q", width, got)
		}
		if width == 1280 {
			if v["measures"][0] <= 768 {
				t.Fatalf("at 1280 px the measures table is %d px: the page is not the wide one (%s)", v["measures"][0], got)
			}
			for _, name := range []string{"dt", "validation", "rejects"} {
				for _, n := range v[name] {
					if n > 768 {
						t.Errorf("at 1280 px a %s is %d px wide, past the 48rem (768 px) line (%s)", name, n, got)
					}
				}
			}
			continue
		}
		for _, n := range v["hidden"] {
			if n > 0 {
				t.Errorf("at 390 px a reject-reasons table scrolls sideways by %d px (%s)", n, got)
			}
		}
		for i, n := range v["example"] {
			if n < v["rejects"][0]*9/10 {
				t.Errorf("at 390 px example %d is %d px of its %d px table: a sliver (%s)", i+1, n, v["rejects"][0], got)
			}
		}
	}
}
