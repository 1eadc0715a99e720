package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/extract"
)

// fakeEngineConfig starts the fake engine (a real process) with flags
// and returns a configuration whose production is it.
func fakeEngineConfig(t *testing.T, flags ...string) string {
	t.Helper()
	port := cliFreePort(t)
	b, _ := json.Marshal(flags)
	startFakeDirect(t, buildFakeEngine(t), port, strings.Trim(string(b), "[]"))
	cfg := filepath.Join(t.TempDir(), "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[production]\nbackend = \"fake\"\n\n[backends.fake]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:%d\"\nmodel = \"fake-model\"\n", port)), 0o644)
	return cfg
}

// A reply cut at max_tokens (finish_reason "length") is rejected as
// truncated even when the cut falls after the JSON ended, so that what
// arrived parses; it gets the repair request like any failed reply.
func TestExtractTruncatedReplyThatParsesIsRejected(t *testing.T) {
	sentence := "Marta Olsen founded the Olsen Bakery in Tromvik in 1952."
	reply := fmt.Sprintf(`{"claims":[{"text":%q,"quote":%q}]}`, sentence, sentence)
	// The fake engine's tokens are 4 bytes: the cut falls in the white
	// space after the object.
	maxTokens := (len(reply)+3)/4 + 1
	cfg := fakeEngineConfig(t, "--chat", "ok", "--json-reply", reply+strings.Repeat(" ", 40))
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "a.txt"), []byte(sentence+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", docs, "--out", out, "--max-tokens", strconv.Itoa(maxTokens), "--json")
	var sum extract.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s%s", err, stdout, stderr)
	}
	if code != ExitFailed || sum.Stats.Claims != 0 || sum.Requests != 2 || sum.Stats.SchemaValidReplies != 0 {
		t.Fatalf("exit %d, %d claims, %d requests, %d schema-valid; want exit 1, no claim, the first request and its repair, none schema-valid", code, sum.Stats.Claims, sum.Requests, sum.Stats.SchemaValidReplies)
	}
	rs, err := extract.ReadRejects(filepath.Join(out, extract.RejectsFile))
	if err != nil || len(rs) != 2 {
		t.Fatalf("rejects %d (%v), want one per attempt", len(rs), err)
	}
	for _, r := range rs {
		if r.Kind != extract.RejectReply || r.FinishReason != "length" || len(r.Reasons) != 1 || r.Reasons[0].Code != extract.ReasonTruncated || !strings.Contains(r.Reasons[0].Detail, "--max-tokens") {
			t.Errorf("reject %+v: want a truncated reply reject saying to raise --max-tokens", r)
		}
	}
	if !rs[0].Retried {
		t.Errorf("the truncated first reply was not followed by a repair request")
	}
	// With room for the whole reply, the same server's claim is accepted.
	out2 := filepath.Join(t.TempDir(), "out")
	if code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", docs, "--out", out2, "--max-tokens", "200"); code != ExitOK {
		t.Errorf("with max_tokens 200: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A document starting with a UTF-8 BOM and holding a NUL byte, through
// the fake engine (a real process) echoing each target sentence as its
// claim: no claim carries the BOM, spans count from the first byte of
// the file (BOM included) and still cut out the quote, and the claim with
// the NUL is rejected as a control character.
func TestExtractBOMAndControlCharacters(t *testing.T) {
	cfg := fakeEngineConfig(t)
	docs := t.TempDir()
	text := "\ufeffMarta Olsen founded the Olsen Bakery in Tromvik in 1952. The bakery sold bread\x00 to 40 shops.\n"
	os.WriteFile(filepath.Join(docs, "a.txt"), []byte(text), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", docs, "--out", out, "--max-repairs", "0")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1 (the NUL claim is rejected)\n%s%s", code, stdout, stderr)
	}
	claims, err := extract.ReadClaims(filepath.Join(out, extract.ClaimsFile))
	if err != nil || len(claims) == 0 {
		t.Fatalf("claims %d (%v)", len(claims), err)
	}
	for _, c := range claims {
		if strings.Contains(c.Text, "\ufeff") || strings.Contains(c.Quote, "\ufeff") || strings.ContainsRune(c.Text, 0) {
			t.Errorf("claim %q (quote %q) holds the BOM or a NUL", c.Text, c.Quote)
		}
		if c.SentenceIndex == 0 && c.SentenceSpan[0] != 3 {
			t.Errorf("first sentence span %v, want it to start at byte 3 (after the BOM, counted)", c.SentenceSpan)
		}
		if q := text[c.QuoteSpan[0]:c.QuoteSpan[1]]; c.Match == "exact" && q != c.Quote {
			t.Errorf("quote_span %v cuts %q out of the file, not the quote %q", c.QuoteSpan, q, c.Quote)
		}
	}
	rs, _ := extract.ReadRejects(filepath.Join(out, extract.RejectsFile))
	found := false
	for _, r := range rs {
		for _, why := range r.Reasons {
			if why.Code == extract.ReasonControlChar && strings.Contains(why.Detail, "NUL") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no control_character reject naming the NUL: %+v", rs)
	}
}

// Rerunning extract on an --out directory with a setting that changes the
// output is bad usage (exit 2) naming the setting, its old and new values
// and what to do; nothing is sent. The same settings resume.
func TestExtractResumeRefusesChangedSettings(t *testing.T) {
	cfg := fakeEngineConfig(t)
	b, _ := os.ReadFile(cfg)
	// The same server under another base URL: a different profile value.
	other := filepath.Join(t.TempDir(), "other.toml")
	os.WriteFile(other, []byte(strings.Replace(string(b), "http://127.0.0.1:", "http://localhost:", 1)), 0o644)
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "a.txt"), []byte("Marta Olsen founded the Olsen Bakery in Tromvik in 1952.\n"), 0o644)
	docs2 := t.TempDir()
	os.WriteFile(filepath.Join(docs2, "a.txt"), []byte("Marta Olsen founded the Olsen Bakery in Tromvik in 1952.\n"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	run := func(config string, args ...string) (int, string) {
		code, stdout, stderr := claimsCLI(t, append([]string{"--config", config, "extract", "--out", out}, args...)...)
		return code, stdout + stderr
	}
	if code, text := run(cfg, docs); code != ExitOK {
		t.Fatalf("first run: exit %d\n%s", code, text)
	}
	runJSON, _ := os.ReadFile(filepath.Join(out, extract.RunFile))
	for _, c := range []struct {
		config string
		args   []string
		want   string
	}{
		{cfg, []string{docs, "--max-doc-bytes", "100"}, "max_doc_bytes was 1048576, now 100 (--max-doc-bytes)"},
		{cfg, []string{docs, "--max-request-bytes", "9000"}, "max_request_bytes was 16384, now 9000 (--max-request-bytes)"},
		{cfg, []string{docs, "--max-tokens", "64"}, "max_tokens was 512, now 64 (--max-tokens)"},
		{other, []string{docs}, `base_url was "http://127.0.0.1:`},
		{cfg, []string{docs2}, "input was paths " + docs + ", now paths " + docs2},
		{cfg, []string{"--corpus", claimsMiniCorpus}, "input was paths " + docs + ", now corpus hiro-mini"},
	} {
		code, text := run(c.config, c.args...)
		if code != ExitUsage || !strings.Contains(text, c.want) || !strings.Contains(text, "new --out directory") {
			t.Errorf("rerun %q: exit %d, want 2 saying %q and what to do:\n%s", c.args, code, c.want, text)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(out, extract.RunFile)); string(after) != string(runJSON) {
		t.Errorf("a refused rerun changed run.json")
	}
	if code, text := run(cfg, docs); code != ExitOK || !strings.Contains(text, "1 finished earlier") {
		t.Errorf("rerun with the same settings: exit %d\n%s", code, text)
	}
}
