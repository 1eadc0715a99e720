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
