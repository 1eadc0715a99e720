package journal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromiumPath finds headless Chromium ($HIRO_CHROMIUM, then PATH), or skips
// the test saying why. Browser tests also skip under -short: the golden and
// escaping tests cover the same output without a browser.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped with -short")
	}
	if p := os.Getenv("HIRO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("headless Chromium not found (apt-get install chromium, or set HIRO_CHROMIUM); browser tests skipped")
	return ""
}

// dumpDOM loads file in headless Chromium, lets scripts and meta refreshes
// run for 2 s of virtual time, and returns the serialized DOM.
func dumpDOM(t *testing.T, bin, file string) string {
	t.Helper()
	return runChromium(t, bin, "--window-size=1280,1000", "file://"+file)
}

// probeTitle lays file out in headless Chromium width px wide and returns
// the title its probe script wrote once laid out. Chromium's --dump-dom
// lays a page out at least 500 px wide whatever --window-size says, so a
// narrower width loads file in an iframe of exactly that width and copies
// the title out of it.
func probeTitle(t *testing.T, bin, file string, width int) string {
	t.Helper()
	if width >= 500 {
		return domTitle(t, runChromium(t, bin, fmt.Sprintf("--window-size=%d,1000", width), "file://"+file))
	}
	frame := filepath.Join(filepath.Dir(file), fmt.Sprintf("frame-%d.html", width))
	page := fmt.Sprintf(`<!doctype html><html><head><title></title></head><body style="margin:0">`+
		`<iframe src=%q style="width:%dpx;height:1000px;border:0" onload="document.title=this.contentDocument.title"></iframe></body></html>`,
		filepath.Base(file), width)
	if err := os.WriteFile(frame, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	return domTitle(t, runChromium(t, bin, "--allow-file-access-from-files", "--window-size=1280,1000", "file://"+frame))
}

// runChromium runs headless Chromium's --dump-dom with args and returns
// the DOM, which always has a <title>. On a loaded machine Chromium now
// and then exits printing nothing; such a run is tried again, up to three
// times, and the failure names each attempt's exit and stderr.
func runChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var tries []string
	for try := 1; try <= 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu",
			"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=2000", "--dump-dom"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err == nil && titleElement.Match(out) {
			return string(out)
		}
		e := stderr.String()
		if len(e) > 600 {
			e = "..." + e[len(e)-600:]
		}
		tries = append(tries, fmt.Sprintf("attempt %d: exit %v, %d bytes printed, stderr %q", try, err, len(out), e))
		t.Logf("chromium --dump-dom %s: %s", args[len(args)-1], tries[len(tries)-1])
	}
	t.Fatalf("chromium --dump-dom %s printed no DOM with a <title> in 3 attempts:\n%s", args[len(args)-1], strings.Join(tries, "\n"))
	return ""
}

var titleElement = regexp.MustCompile(`(?s)<title>(.*?)</title>`)

func domTitle(t *testing.T, dom string) string {
	t.Helper()
	m := titleElement.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no <title> in the DOM:\n%s", dom)
	}
	return m[1]
}

func TestBrowserIndexRenders(t *testing.T) {
	bin := chromiumPath(t)
	site := buildTestSite(t)
	dom := dumpDOM(t, bin, filepath.Join(site, "index.html"))
	for _, want := range []string{
		`<a href="entries/vllm-trial.html">Alternate vLLM backend stops before inference</a>`,
		`<a href="entries/storage-relocation.html">Moving the WSL2 distribution off the system drive</a>`,
		`<a href="entries/script-title.html">&lt;script&gt;document.title="pwned"&lt;/script&gt; &amp; "quotes"</a>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("index DOM lacks %s", want)
		}
	}
	if got := domTitle(t, dom); got != DefaultSiteTitle {
		t.Errorf("index title %q, want %q", got, DefaultSiteTitle)
	}
}

func TestBrowserEntryShowsValidationTable(t *testing.T) {
	bin := chromiumPath(t)
	site := buildTestSite(t)
	dom := dumpDOM(t, bin, filepath.Join(site, "entries", "vllm-trial.html"))
	i := strings.Index(dom, `<table class="validation">`)
	if i < 0 {
		t.Fatalf("entry DOM has no validation table:\n%s", dom)
	}
	table := dom[i : i+strings.Index(dom[i:], "</table>")]
	if n := strings.Count(table, "<tr>"); n != 4 {
		t.Errorf("validation table has %d rows, want a header and 3 rows", n)
	}
	for _, want := range []string{
		`<td class="check">vLLM API readiness</td><td><span class="badge bad">failed</span></td><td>Three attempts, none ready.</td>`,
		`<span class="badge na">not run</span>`,
		`<span class="badge ok">passed</span>`,
	} {
		if !strings.Contains(table, want) {
			t.Errorf("validation table lacks %s", want)
		}
	}
}

func TestBrowserAliasLandsOnEntry(t *testing.T) {
	bin := chromiumPath(t)
	site := buildTestSite(t)
	for _, alias := range []string{"alternate-backend", "vllm-wsl2"} {
		dom := dumpDOM(t, bin, filepath.Join(site, "entries", alias+".html"))
		if strings.Contains(dom, "This entry moved to") {
			t.Errorf("alias %s: Chromium stayed on the alias page", alias)
		}
		if !strings.Contains(dom, `<h1>Alternate vLLM backend stops before inference</h1>`) || !strings.Contains(dom, `<table class="validation">`) {
			t.Errorf("alias %s did not land on the entry page:\n%.600s", alias, dom)
		}
	}
}

func TestBrowserScriptInTitleIsText(t *testing.T) {
	bin := chromiumPath(t)
	site := buildTestSite(t)
	dom := dumpDOM(t, bin, filepath.Join(site, "entries", "script-title.html"))
	// Had any injected script or handler run, it would have set
	// document.title to "pwned" or "pwned-img".
	wantTitle := `&lt;script&gt;document.title="pwned"&lt;/script&gt; &amp; "quotes" · ` + DefaultSiteTitle
	if got := domTitle(t, dom); got != wantTitle {
		t.Fatalf("document title %q, want %q: injected markup ran or was mangled", got, wantTitle)
	}
	for _, want := range []string{
		`<h1>&lt;script&gt;document.title="pwned"&lt;/script&gt; &amp; "quotes"</h1>`,
		`&lt;img src=x onerror="document.title='pwned-img'"&gt;`,
		`<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks the escaped text %s", want)
		}
	}
	if strings.Contains(strings.ToLower(dom), "<script") || strings.Contains(dom, "<img") {
		t.Error("the DOM holds a script or img element from entry text")
	}

	md := dumpDOM(t, bin, filepath.Join(site, "entries", "storage-relocation.html"))
	if got := domTitle(t, md); strings.Contains(got, "pwned") {
		t.Fatalf("a script in the Markdown body ran: title %q", got)
	}
	if strings.Contains(strings.ToLower(md), "<script") {
		t.Error("the Markdown body's script element reached the DOM")
	}
}

// The pictures of a campaign's page are inline SVG that a browser draws
// as SVG elements, and a document id holding markup stays text.
func TestBrowserEntryShowsCharts(t *testing.T) {
	bin := chromiumPath(t)
	ev := demoEvidence()
	_, site := publishDemo(t, ev)
	pages, _ := filepath.Glob(filepath.Join(site, "entries", "*.html"))
	if len(pages) != 1 {
		t.Fatalf("pages %v", pages)
	}
	dom := dumpDOM(t, bin, pages[0])
	if n := strings.Count(dom, `<figure class="chart">`); n != 3 {
		t.Errorf("%d charts in the DOM, want 3", n)
	}
	if n := strings.Count(dom, "<svg"); n < 3 {
		t.Errorf("%d svg elements in the DOM, want 3", n)
	}
	if strings.Contains(strings.ToLower(dom), "<script") {
		t.Error("the DOM holds a script element from a chart label")
	}
	if !strings.Contains(dom, "&lt;script&gt;alert(1)") {
		t.Error("the document id with markup is not shown as text")
	}
	if got := domTitle(t, dom); !strings.HasPrefix(got, "A weaker checkpoint against production") {
		t.Errorf("document title %q", got)
	}
}

// TestBrowserPagerLongTitleFits: an entry whose neighbours have long titles
// without a break opportunity (one with underscores, one with spaces) is
// laid out by Chromium at 1280 and 400 px wide without the page scrolling
// sideways: the pager's links wrap inside their half of the page.
func TestBrowserPagerLongTitleFits(t *testing.T) {
	bin := chromiumPath(t)
	dir := filepath.Join(t.TempDir(), "journal")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2025, 7, 1, 9, 0, 0, 0, time.UTC)
	for i, title := range []string{
		"Qwen3_30B_A3B_Instruct_2507_AWQ_marlin_repack_on_the_RTX_4090_with_cuda_graphs_disabled_and_a_very_long_name",
		"Middle",
		"vllm-0.9.1+cu128/Qwen3-30B-A3B-Instruct-2507-AWQ/marlin_repack/RTX4090/cuda_graphs_disabled/very_long_name",
	} {
		e := &Entry{Timestamp: ts.Add(time.Duration(i) * time.Hour), Slug: []string{"older", "middle", "newer"}[i], Title: title}
		if _, err := j.Create(e); err != nil {
			t.Fatal(err)
		}
	}
	if j, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(t.TempDir(), "site")
	if _, err := Build(j, site, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(site, "entries", "middle.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<nav class="pager">`) {
		t.Fatalf("middle.html has no pager:\n%s", page)
	}
	// A copy of the page beside it (same stylesheet) that writes its
	// layout's overflow into the title once laid out.
	probe := filepath.Join(site, "entries", "probe.html")
	script := `<script>addEventListener("load",()=>{const d=document.documentElement;document.title="overflow="+(d.scrollWidth-d.clientWidth)})</script></body>`
	if err := os.WriteFile(probe, []byte(strings.Replace(string(page), "</body>", script, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1280, 390} {
		if got := probeTitle(t, bin, probe, width); got != "overflow=0" {
			t.Errorf("at %d px wide the page scrolls sideways: %s px (want overflow=0)", width, strings.TrimPrefix(got, "overflow="))
		}
	}
}

// screenshot saves file as laid out by headless Chromium 1280 px wide to
// png.
func screenshot(t *testing.T, bin, file, png string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+t.TempDir(),
		"--window-size=1280,2200", "--hide-scrollbars", "--screenshot="+png, "file://"+file).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	t.Logf("screenshot: %s", png)
}
