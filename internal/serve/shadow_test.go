package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/prompt"
	"github.com/hiro-dev/hiro/internal/shadow"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// extractionBody is a chat request as `hiro extract` sends it (the
// prompt's system and user messages) for sentence i.
func extractionBody(model string, i int, stream bool) string {
	in := prompt.Input{HeadingPath: []string{"Bridges"}, Before: []string{"The city grew along the river."},
		Target: "The bridge opened in 1932 and carried trams across the river " + itoa(i) + " times a day.", After: []string{"It was rebuilt later."}}
	var msgs []map[string]string
	for _, m := range extract.Messages(in) {
		msgs = append(msgs, map[string]string{"role": m.Role, "content": m.Content})
	}
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream, "max_tokens": 256, "temperature": 0, "messages": msgs,
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "claims", "schema": prompt.SchemaJSON(), "strict": true}}})
	return string(b)
}

// shadowCandidate adds an unmanaged profile NAME for a fake engine it
// starts on a free port with args; the fake requires its own key, which
// the profile sends (from the variable keyEnv).
func shadowCandidate(t *testing.T, name, keyEnv string, args ...string) string {
	t.Helper()
	port := freePort(t)
	startOther(t, port, append([]string{"--require-api-key", "--api-key", "sk-candidate-key-" + name, "--key-public-paths", "/health"}, args...)...)
	t.Setenv(keyEnv, "sk-candidate-key-"+name)
	return `[backends.` + name + `]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:` + itoa(port) + `"
model = "other-model"
api_key_env = "` + keyEnv + `"
`
}

func waitShadowEnd(t *testing.T, r *router, within time.Duration) *shadow.Result {
	t.Helper()
	var st *control.ShadowStatus
	if !testsupport.WaitFor(within, func() bool {
		var err error
		if st, err = r.ctl.ShadowStatus(context.Background()); err != nil {
			t.Fatal(err)
		}
		return !st.Active && st.Result != nil
	}) {
		t.Fatalf("shadow run still active after %s: %+v", within, st.Result)
	}
	return st.Result
}

// TestShadowMirrorsAndScores: with a run at share 1, every extraction
// request through the router is answered by production and mirrored to
// the candidate with the candidate's key (the fake refuses any other:
// the client's key is never forwarded); the pairs are scored with the
// extraction validators, the run ends at max_pairs and passes. A
// candidate whose replies fail the validators fails its run.
func TestShadowMirrorsAndScores(t *testing.T) {
	cands := shadowCandidate(t, "good", "HIRO_TEST_GOOD_KEY", "--chat", "claims") +
		shadowCandidate(t, "bad", "HIRO_TEST_BAD_KEY", "--schema-fail-open")
	cfg := fakeConfig(t, []string{"--chat", "claims"}, `api_keys_env = "HIRO_TEST_ROUTER_KEYS"
`+cands)
	t.Setenv("HIRO_TEST_ROUTER_KEYS", "sk-router-client-key-1")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	auth := []string{"Authorization", "Bearer sk-router-client-key-1"}

	run := func(cand string, n int) *shadow.Result {
		st, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: cand, Config: shadow.Config{Share: 1, MaxPairs: n, MinPairs: n, QueueSize: 2 * n}})
		if err != nil || !st.Active || st.Result.Remote {
			t.Fatalf("start %s: %+v %v", cand, st, err)
		}
		for i := range n {
			code, _, body := post(t, r.url, RouteChat, extractionBody("extraction", i, i%2 == 0), auth...)
			if code != 200 || !strings.Contains(body, "fake-model") {
				t.Fatalf("client request %d: %d %s", i, code, body)
			}
		}
		return waitShadowEnd(t, r, 20*time.Second)
	}

	good := run("good", 150)
	if good.Ended != "max_pairs" || good.Pairs != 150 || good.Extraction.Pairs != 150 || good.CandidateErrors != 0 || good.Dropped != 0 {
		t.Fatalf("good run: %s (ended %q, %d pairs, %d extraction, %d candidate errors, %d dropped)", good.Summary, good.Ended, good.Pairs, good.Extraction.Pairs, good.CandidateErrors, good.Dropped)
	}
	if good.Outcome != "passed" || good.Extraction.Agreement != 1 || good.Extraction.CandidateGrounded == 0 || good.CandidateLatency == nil {
		t.Errorf("good run: %s reasons %v extraction %+v", good.Outcome, good.Reasons, good.Extraction)
	}
	measures := map[string]string{}
	for _, c := range good.Comparisons {
		measures[c.Measure] = c.Outcome
	}
	for _, m := range []string{shadow.MeasureSuccess, shadow.MeasureSchemaValid, shadow.MeasureGrounding, shadow.MeasureAccepted} {
		if measures[m] != "passed" {
			t.Errorf("comparison %s: %q (all: %v)", m, measures[m], measures)
		}
	}
	if len(good.PairRecords) != 150 || good.PairRecords[0].RequestSHA256 == "" || good.PairRecords[0].Kind != shadow.KindExtraction {
		t.Errorf("pair records: %+v", good.PairRecords[:min(1, len(good.PairRecords))])
	}
	b, _ := json.Marshal(good)
	if strings.Contains(string(b), "bridge opened") || strings.Contains(string(b), "trams") {
		t.Errorf("the account holds request text: %s", b)
	}

	bad := run("bad", 30)
	if bad.Outcome != "failed" || bad.Extraction.CandidateSchemaValid != 0 || bad.Extraction.ProductionSchemaValid != 30 {
		t.Errorf("bad run: %s %+v", bad.Summary, bad.Extraction)
	}
	if !strings.Contains(strings.Join(bad.Reasons, "; "), shadow.MeasureSchemaValid) {
		t.Errorf("bad run's reasons do not name schema validity: %v", bad.Reasons)
	}
	if !strings.Contains(r.events.String(), `"event":"shadow_end"`) {
		t.Errorf("no shadow_end event:\n%s", r.events.String())
	}
}

// TestShadowNeverSlowsClients: a candidate that never answers and a
// queue of one: clients get production's answers at production's pace,
// the mirror drops what does not fit (counted), and a stop ends the run
// at once with what was scored (nothing).
func TestShadowNeverSlowsClients(t *testing.T) {
	cand := shadowCandidate(t, "hung", "HIRO_TEST_HUNG_KEY", "--chat", "hang")
	cfg := fakeConfig(t, nil, cand)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	if _, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: "hung", Config: shadow.Config{Share: 1, QueueSize: 1, Workers: 1}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	var slowest time.Duration
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				t0 := time.Now()
				code, _, body := post(t, r.url, RouteChat, chatBody("extraction", (w+i)%2 == 0))
				d := time.Since(t0)
				mu.Lock()
				slowest = max(slowest, d)
				if code != 200 {
					failed = append(failed, body)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 || slowest > 2*time.Second {
		t.Fatalf("clients: %d failed (%v), slowest %s", len(failed), failed, slowest)
	}
	st, err := r.ctl.ShadowStop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res := st.Result
	if res.Ended != "command" || res.Sampled != 100 || res.Dropped < 90 || res.Pairs != 0 || res.Mirrored > 2 {
		t.Errorf("run against a hung candidate: %s (ended %q, sampled %d, dropped %d, pairs %d, mirrored %d)", res.Summary, res.Ended, res.Sampled, res.Dropped, res.Pairs, res.Mirrored)
	}
	if res.Outcome != "inconclusive" {
		t.Errorf("outcome with no pairs: %s", res.Outcome)
	}
	// The mirror is off: requests cost nothing more and are not sampled.
	post(t, r.url, RouteChat, chatBody("extraction", false))
	if st, _ := r.ctl.ShadowStatus(context.Background()); st.Active || st.Result.Sampled != 100 {
		t.Errorf("after stop: %+v", st)
	}
}

// TestShadowRefusals: production itself, a remote candidate whose
// profile did not opt in, an exclusive candidate on this machine (the
// message names what works instead), a candidate that is not running,
// and a second run are refused with what to do.
func TestShadowRefusals(t *testing.T) {
	free := freePort(t)
	cfg := fakeConfig(t, nil, `[backends.remote]
engine = "openai"
unmanaged = true
base_url = "http://192.0.2.10:8000"
model = "m"
[backends.exclusive]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:`+itoa(free)+`"
model = "m"
exclusive_accelerator = true
[backends.down]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:`+itoa(free)+`"
model = "m"
`+shadowCandidate(t, "up", "HIRO_TEST_UP_KEY"))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	for _, c := range []struct{ cand, want string }{
		{"prod", "is production"},
		{"remote", "set shadow_remote = true in [backends.remote]"},
		{"exclusive", "frozen corpus (a semantic gate), or serve it on a second machine"},
		{"down", "does not answer"},
		{"nosuch", `no backend profile "nosuch"`},
	} {
		_, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: c.cand, Config: shadow.Config{Share: 0.5}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("start %s: %v; want %q", c.cand, err, c.want)
		}
	}
	if _, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: "up", Config: shadow.Config{Share: 2}}); err == nil || !strings.Contains(err.Error(), "use a fraction in (0, 1]") {
		t.Errorf("share 2: %v", err)
	}
	// One server may serve several models (Ollama): production's address
	// with another model is another backend.
	other := *cfg.Backends["prod"]
	other.Name, other.Model = "samehost", "other-model"
	if _, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: "samehost", Effective: &other, Config: shadow.Config{Share: 0.5}}); err != nil {
		t.Fatalf("production's address with another model: %v", err)
	}
	if _, err := r.ctl.ShadowStop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: "up", Config: shadow.Config{Share: 0.5}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: "up", Config: shadow.Config{Share: 0.5}}); err == nil || !strings.Contains(err.Error(), "is active; stop it first") {
		t.Errorf("second run: %v", err)
	}
}

// TestShadowAccountAddsUp: every sampled request is counted in exactly
// one bucket. Production streams slowly; the candidate never answers
// (one worker, a queue of four). Two streams are still under way at the
// stop, three are cut by their clients mid-way, twenty plain requests
// fill the worker and the queue and are dropped past them; after the
// stop (and once production's answers ended) sampled = mirrored +
// dropped + too_large + abandoned + unsent + queued + pending, and
// the account says each.
func TestShadowAccountAddsUp(t *testing.T) {
	cand := shadowCandidate(t, "hung", "HIRO_TEST_HUNG_KEY", "--chat", "hang")
	cfg := fakeConfig(t, []string{"--token-delay", "40ms", "--reply", strings.Repeat("word ", 20)}, cand)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	if _, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: "hung", Config: shadow.Config{Share: 1, QueueSize: 4, Workers: 1}}); err != nil {
		t.Fatal(err)
	}
	stream := func() (*http.Response, *bufio.Reader) {
		resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("extraction", true)))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		return resp, br
	}
	var open []*bufio.Reader
	for range 2 {
		resp, br := stream()
		defer resp.Body.Close()
		open = append(open, br)
	}
	for range 3 {
		resp, _ := stream()
		resp.Body.Close() // the client leaves mid-stream
	}
	status := func() *shadow.Result {
		st, err := r.ctl.ShadowStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st.Result
	}
	if !testsupport.WaitFor(5*time.Second, func() bool { return status().Abandoned == 3 }) {
		t.Fatalf("the streams cut by their clients are not counted abandoned: %+v", status())
	}
	for i := range 20 {
		if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if _, err := r.ctl.ShadowStop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, br := range open {
		if rest, _ := io.ReadAll(br); !strings.Contains(string(rest), "[DONE]") {
			t.Fatalf("a stream under way at the stop ended cut: %q", rest)
		}
	}
	var res *shadow.Result
	if !testsupport.WaitFor(5*time.Second, func() bool {
		res = status()
		return res.Pending == 0
	}) {
		t.Fatalf("production's answers still pending 5 s after they ended: %+v", res)
	}
	sum := res.Mirrored + res.Dropped + res.TooLarge + res.Abandoned + res.Unsent + res.Queued + res.Pending
	t.Logf("seen %d, sampled %d = mirrored %d + dropped %d + too large %d + abandoned %d + unsent %d + queued %d + pending %d; pairs %d",
		res.Seen, res.Sampled, res.Mirrored, res.Dropped, res.TooLarge, res.Abandoned, res.Unsent, res.Queued, res.Pending, res.Pairs)
	if res.Sampled != 25 || sum != res.Sampled {
		t.Errorf("sampled %d, the buckets add up to %d; want 25 both", res.Sampled, sum)
	}
	if res.Mirrored != 1 || res.Abandoned != 3 || res.Unsent < 3 || res.Dropped == 0 || res.Pairs != 0 {
		t.Errorf("mirrored %d (want the one the worker held), abandoned %d (want 3), unsent %d (want the queued ones and the 2 streams ended after the stop), dropped %d, pairs %d",
			res.Mirrored, res.Abandoned, res.Unsent, res.Dropped, res.Pairs)
	}
}

// TestShadowWaitsForAnIdleRouter: the mirror's work waits for a moment
// without a client request in flight (shadow.idleGate): while a stream is
// under way, a finished request is neither sent to the candidate nor
// scored; once the stream ends the router says it is idle and both pairs
// are scored at once (idle_wait is a minute: only the router's word
// releases them). With HIRO_SHADOW_IDLE_WAIT=0 nothing waits.
func TestShadowWaitsForAnIdleRouter(t *testing.T) {
	cand := shadowCandidate(t, "idle", "HIRO_TEST_IDLE_KEY")
	cfg := fakeConfig(t, []string{"--token-delay", "30ms", "--reply", strings.Repeat("word ", 100)}, cand)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	long := `{"model":"extraction","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"count"}]}`
	status := func() *shadow.Result {
		st, err := r.ctl.ShadowStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st.Result
	}
	run := func(gated bool) {
		if _, err := r.ctl.ShadowStart(context.Background(), control.ShadowStartRequest{Candidate: "idle", Config: shadow.Config{Share: 1, IdleWait: config.Duration{Duration: time.Minute}}}); err != nil {
			t.Fatal(err)
		}
		// A stream of 100 tokens 30 ms apart: 3 s in flight at least.
		resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(long))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
			t.Fatalf("request: %d %s", code, body)
		}
		if gated {
			time.Sleep(300 * time.Millisecond) // many dispatcher ticks
			if res := status(); res.Pairs != 0 || res.Mirrored != 1 {
				t.Fatalf("while a stream is in flight: %d pairs scored, %d mirrored; want 0 and 1 (held at the gate)", res.Pairs, res.Mirrored)
			}
		} else if !testsupport.WaitFor(3*time.Second, func() bool { return status().Pairs == 1 }) {
			t.Fatalf("without the gate the finished request is not scored beside the stream: %+v", status())
		}
		if rest, _ := io.ReadAll(br); !strings.Contains(string(rest), "[DONE]") {
			t.Fatalf("the stream ended cut: %q", rest)
		}
		if !testsupport.WaitFor(10*time.Second, func() bool { return status().Pairs == 2 }) {
			t.Fatalf("gated %v: the pairs are not scored once the router is idle: %+v", gated, status())
		}
		if st, err := r.ctl.ShadowStop(context.Background()); err != nil || st.Result.Pairs != 2 || st.Result.CandidateErrors != 0 {
			t.Fatalf("stop: %+v %v", st, err)
		}
	}
	run(true)
	t.Setenv(shadow.IdleWaitEnv, "0")
	run(false)
}
