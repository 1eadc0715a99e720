package qualify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

func gateTitle(g *GateSpec) string {
	if g.Title != "" {
		return g.Title
	}
	return map[string]string{
		KindPrereq: "Host prerequisites", KindArtifact: "Pinned artifact", KindLaunch: "Backend startup",
		KindReadyControl: "READY control", KindStructuredControl: "Structured-output control",
		KindSequential: "Sequential requests", KindSemantic: "Semantic quality against production",
	}[g.Kind]
}

func fileDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// runGate runs one gate under its bound. A returned error fails the gate
// (its message is the reason); an error wrapping errHarness aborts.
func (c *campaign) runGate(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	bound := c.gateBound(spec)
	gctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var err error
	switch spec.Kind {
	case KindPrereq:
		err = c.gatePrereq(gctx, spec, g)
	case KindArtifact:
		err = c.gateArtifact(gctx, spec, g)
	case KindLaunch:
		err = c.gateLaunch(gctx, spec, g)
	case KindReadyControl:
		err = c.gateReady(gctx, spec, g)
	case KindStructuredControl:
		err = c.gateStructured(gctx, spec, g)
	case KindSequential:
		err = c.gateSequential(gctx, spec, g)
	case KindSemantic:
		err = c.gateSemantic(gctx, spec, g)
	default:
		err = harnessErr("unknown gate kind %q", spec.Kind)
	}
	if err != nil && gctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return fmt.Errorf("gate bound of %s exceeded: %w", bound, err)
	}
	return err
}

// --- prereq ---------------------------------------------------------------

func (c *campaign) gatePrereq(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	var failed []string
	add := func(ch evidence.Check) {
		g.Checks = append(g.Checks, ch)
		if ch.Status != evidence.StatusPassed {
			failed = append(failed, ch.Name+": "+ch.Detail)
		}
	}
	if a := spec.Accelerator; a != nil {
		add(checkAccelerator(ctx, a))
	}
	for _, d := range spec.Disks {
		add(checkDisk(d))
	}
	for _, cmd := range spec.Commands {
		add(checkCommand(ctx, cmd))
	}
	for _, f := range spec.Files {
		ch := evidence.Check{Name: "file " + f, Status: evidence.StatusPassed}
		if st, err := os.Stat(f); err != nil {
			ch.Status, ch.Detail = evidence.StatusFailed, "missing: "+err.Error()
		} else {
			ch.Detail = fmt.Sprintf("present, %d bytes", st.Size())
		}
		add(ch)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d checks failed: %s", len(failed), len(g.Checks), strings.Join(failed, "; "))
	}
	return nil
}

// checkAccelerator queries nvidia-smi for name, total and free memory.
func checkAccelerator(ctx context.Context, a *AcceleratorReq) evidence.Check {
	ch := evidence.Check{Name: "accelerator"}
	out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=name,memory.total,memory.free,driver_version", "--format=csv,noheader,nounits").CombinedOutput()
	ch.Output = string(out)
	if err != nil {
		ch.Status, ch.Detail = evidence.StatusFailed, "nvidia-smi failed: "+firstLine(string(out), err.Error())
		return ch
	}
	var re *regexp.Regexp
	if a.NamePattern != "" {
		re = regexp.MustCompile(a.NamePattern)
	}
	var ok []string
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		name := strings.TrimSpace(f[0])
		free, _ := strconv.Atoi(strings.TrimSpace(f[2]))
		seen = append(seen, fmt.Sprintf("%s (%d MiB free)", name, free))
		if (re == nil || re.MatchString(name)) && free >= a.MinFreeMiB {
			ok = append(ok, name)
		}
	}
	if len(ok) >= a.Count {
		ch.Status, ch.Detail = evidence.StatusPassed, strings.Join(seen, ", ")
	} else {
		ch.Status = evidence.StatusFailed
		ch.Detail = fmt.Sprintf("want %d GPU(s) matching %q with %d MiB free, found %s", a.Count, a.NamePattern, a.MinFreeMiB, strings.Join(seen, ", "))
	}
	return ch
}

func checkDisk(d DiskReq) evidence.Check {
	ch := evidence.Check{Name: "disk " + d.Path}
	var st unix.Statfs_t
	if err := unix.Statfs(d.Path, &st); err != nil {
		ch.Status, ch.Detail = evidence.StatusFailed, err.Error()
		return ch
	}
	free := float64(st.Bavail) * float64(st.Bsize) / (1 << 30)
	ch.Detail = fmt.Sprintf("%.1f GiB free (want %.1f)", free, d.MinFreeGiB)
	ch.Status = evidence.StatusPassed
	if free < d.MinFreeGiB {
		ch.Status = evidence.StatusFailed
	}
	return ch
}

func checkCommand(ctx context.Context, cr CommandReq) evidence.Check {
	ch := evidence.Check{Name: "command " + cr.Name}
	cmd := exec.CommandContext(ctx, cr.Run[0], cr.Run[1:]...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	ch.Output = truncate(string(out), 4000)
	if err != nil {
		ch.Status, ch.Detail = evidence.StatusFailed, fmt.Sprintf("%s: %s", strings.Join(cr.Run, " "), firstLine(string(out), err.Error()))
		return ch
	}
	if cr.VersionPattern != "" {
		m := regexp.MustCompile(cr.VersionPattern).FindString(string(out))
		if m == "" {
			ch.Status, ch.Detail = evidence.StatusFailed, fmt.Sprintf("output does not match %q: %s", cr.VersionPattern, firstLine(string(out), ""))
			return ch
		}
		ch.Detail = m
	} else {
		ch.Detail = firstLine(string(out), "ok")
	}
	ch.Status = evidence.StatusPassed
	return ch
}

func firstLine(s, dflt string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return truncate(l, 300)
		}
	}
	return dflt
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// --- artifact -------------------------------------------------------------

func (c *campaign) gateArtifact(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	rep, err := artifact.Verify(ctx, spec.Manifest, spec.Dir, artifact.VerifyOptions{})
	if err != nil {
		return fmt.Errorf("artifact verify: %v", err)
	}
	g.Result = map[string]any{
		"repo": rep.Repo, "revision": rep.Revision, "manifest_digest": rep.Digest,
		"files_count": rep.Files, "bytes": rep.Bytes, "hashed": rep.Hashed,
		"missing": rep.Missing, "changed": len(rep.Changed), "extra": rep.Extra,
		"paths": map[string]string{"manifest": spec.Manifest, "dir": rep.Dir},
	}
	if rep.Digest != "" {
		c.ev.Fingerprints.ArtifactManifest = rep.Digest
	}
	if !rep.OK {
		return fmt.Errorf("artifact drift: %s", rep.Summary())
	}
	return nil
}

// --- launch ---------------------------------------------------------------

func (c *campaign) launchBound(spec *GateSpec) time.Duration {
	if spec.Timeout.Duration > 0 && spec.Timeout.Duration != DefaultGateTimeout {
		return spec.Timeout.Duration
	}
	var sum time.Duration
	for _, r := range spec.Ladder(c.candidate) {
		sum += r.Profile.ReadyTimeout.Duration + r.Profile.StopGrace.Duration + 5*time.Second
	}
	return sum
}

func (c *campaign) gateLaunch(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	rungs := spec.Ladder(c.candidate)
	// A candidate left running by an earlier, killed hiro would hold the
	// port and be blamed on this attempt: refuse, and say how to stop it.
	if st, err := supervisor.Status(c.cfg.StateDir, c.candidate.Name); err == nil && st.Status == supervisor.StatusRunning {
		return harnessErr("backend %s is already running (pid %d, started %s by an earlier hiro); stop it with 'hiro backend stop %s' and rerun",
			c.candidate.Name, st.PID, st.StartedAt.Format(time.RFC3339), c.candidate.Name)
	}
	var last *failure.Failure
	for i := range rungs {
		r := &rungs[i]
		c.out.line("[%s] attempt %d/%d %s: %s", spec.ID, i+1, len(rungs), r.Name, r.Reason)
		t0 := time.Now()
		opts := supervisor.Options{StateDir: c.cfg.StateDir, Attempt: r.Name, OnStart: func(p *supervisor.Process) {
			// Recorded from the start: if hiro is killed, 'hiro backend
			// status/stop' and the lease recovery can reach the attempt.
			_ = supervisor.WriteRecord(c.cfg.StateDir, p.Record())
		}, Progress: func(p supervisor.Progress) {
			c.out.status("[%s] attempt %d/%d %s: %s, phase %s, %s / %s", spec.ID, i+1, len(rungs), r.Name, p.Step, p.Phase,
				p.Elapsed.Round(time.Second), r.Profile.ReadyTimeout.Duration)
		}}
		proc, res := supervisor.Start(ctx, r.Profile, opts)
		c.engineWait += time.Since(t0)
		a := evidence.Attempt{Name: r.Name, Reason: r.Reason, Changes: r.Changes, LogPath: res.LogPath,
			Facts: res.Facts, DurationMS: time.Since(t0).Milliseconds()}
		if res.Stop != nil {
			a.Stop = &evidence.Stop{Graceful: res.Stop.Graceful, Killed: res.Stop.Killed, Leak: res.Stop.Leak}
		}
		switch res.State {
		case supervisor.StateReady:
			a.ReachedReady, a.ReadyAfterMS = true, res.ReadyAfterMS
			g.Attempts = append(g.Attempts, a)
			c.proc, c.procRung = proc, r
			model := r.Profile.Model
			if len(res.ModelIDs) > 0 {
				model = pickModel(r.Profile, res.ModelIDs)
			}
			c.out.line("[%s] attempt %s reached ready in %s (model %s, reply %q)", spec.ID, r.Name,
				time.Duration(res.ReadyAfterMS)*time.Millisecond, model, res.ProbeReply)
			return nil
		case supervisor.StateFailed:
			a.Failure = res.Failure
			if a.Facts == nil && res.Failure != nil {
				a.Facts = res.Failure.Facts
			}
			last = res.Failure
			g.Attempts = append(g.Attempts, a)
			c.out.line("[%s] attempt %s failed: %s", spec.ID, r.Name, res.Failure.Error())
		case supervisor.StateAborted:
			g.Attempts = append(g.Attempts, a)
			return fmt.Errorf("attempt %s aborted: %s", r.Name, res.Error)
		default:
			g.Attempts = append(g.Attempts, a)
			return harnessErr("attempt %s could not be made: %s", r.Name, res.Error)
		}
		_ = c.save()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if last != nil {
		g.Failure = last
	}
	return fmt.Errorf("no attempt reached ready (%d of %d declared attempts made)", len(g.Attempts), len(spec.Variants)+1)
}

// candidateClient returns the client and model for the ready candidate.
func (c *campaign) candidateClient() (*llm.Client, string, error) {
	if c.proc == nil || c.procRung == nil {
		return nil, "", harnessErr("no ready candidate (a request gate needs a passed launch gate)")
	}
	return llm.New(c.procRung.Profile.BaseURL, c.hc), c.procRung.Profile.Model, nil
}

// --- ready_control ---------------------------------------------------------

func (c *campaign) gateReady(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	cl, model, err := c.candidateClient()
	if err != nil {
		return err
	}
	zero := 0.0
	t0 := time.Now()
	reply, err := cl.Chat(ctx, llm.Request{Model: model, Messages: []llm.Message{{Role: "user", Content: spec.Prompt}},
		MaxTokens: spec.MaxTokens, Temperature: &zero, Timeout: spec.RequestTimeout.Duration})
	c.engineWait += time.Since(t0)
	stats := &evidence.RequestStats{Count: 1}
	g.Requests = stats
	if err != nil {
		stats.Errors = 1
		stats.ErrorMessages = []string{err.Error()}
		g.Failure = c.requestFailure(err)
		return fmt.Errorf("READY completion failed: %v", err)
	}
	got := strings.TrimSpace(reply.Text)
	stats.Samples = []string{got}
	stats.TTFT = percentiles([]float64{ms(reply.TTFT)})
	stats.Latency = percentiles([]float64{ms(reply.Latency)})
	if got != spec.Expect {
		return fmt.Errorf("reply was %q, want exactly %q", truncate(got, 200), spec.Expect)
	}
	return nil
}

// requestFailure classifies a request error during a request gate.
func (c *campaign) requestFailure(err error) *failure.Failure {
	f := &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseInference, RootCause: err.Error()}
	var ae *llm.APIError
	if errors.As(err, &ae) && ae.StatusCode >= 400 && ae.StatusCode < 500 && regexp.MustCompile(`(?i)template`).MatchString(ae.Message) {
		f.Class = failure.ClassTokenizerTemplate
	}
	if c.proc != nil {
		select {
		case <-c.proc.Exited():
			x := c.proc.ExitInfo()
			f.ExitCode = x.Code
			f.Signal = x.Signal
			f.LogTail = c.proc.Tracker().Tail()
		default:
		}
	}
	return f
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentiles computes nearest-rank p50/p95/p99 and max of xs.
func percentiles(xs []float64) *evidence.Percentiles {
	if len(xs) == 0 {
		return nil
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return round3(s[i])
	}
	return &evidence.Percentiles{P50: rank(50), P95: rank(95), P99: rank(99), Max: round3(s[len(s)-1])}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// --- structured_control ----------------------------------------------------

// controlSentences are the built-in inputs of the request gates: short,
// self-contained sentences with names, numbers and dates, written for
// hiro (not from any evaluation corpus).
var controlSentences = []string{
	"Marie Curie won the Nobel Prize in Physics in 1903.",
	"The Danube flows through ten countries, including Austria and Hungary.",
	"In 2019 the company opened a second factory in Porto with 450 workers.",
	"Mount Kilimanjaro, the highest mountain in Africa, rises 5,895 metres above sea level.",
	"The library was founded in 1753 and holds about 25 million items.",
}

func (c *campaign) schemaFor(spec *GateSpec) (json.RawMessage, *jsv.Schema, error) {
	raw := prompt.SchemaJSON()
	if spec.Schema != "" {
		b, err := os.ReadFile(spec.Schema)
		if err != nil {
			return nil, nil, harnessErr("reading schema %s: %v", spec.Schema, err)
		}
		raw = b
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, harnessErr("schema is not JSON: %v", err)
	}
	comp := jsv.NewCompiler()
	if err := comp.AddResource("schema.json", doc); err != nil {
		return nil, nil, harnessErr("schema: %v", err)
	}
	sch, err := comp.Compile("schema.json")
	if err != nil {
		return nil, nil, harnessErr("schema does not compile: %v", err)
	}
	return raw, sch, nil
}

func (c *campaign) requestMessages(spec *GateSpec, i int) []llm.Message {
	if spec.Prompt != "" {
		return []llm.Message{{Role: "user", Content: spec.Prompt}}
	}
	s := controlSentences[i%len(controlSentences)]
	return []llm.Message{{Role: "system", Content: prompt.System()}, {Role: "user", Content: prompt.User(prompt.Input{Target: s})}}
}

func (c *campaign) gateStructured(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	cl, model, err := c.candidateClient()
	if err != nil {
		return err
	}
	raw, sch, err := c.schemaFor(spec)
	if err != nil {
		return err
	}
	accepted, valid := 0, 0
	stats := &evidence.RequestStats{SchemaAccepted: &accepted, SchemaValid: &valid}
	g.Requests = stats
	var ttft, lat []float64
	var rejected, failOpen, crashed []string
	zero := 0.0
	for i := 0; i < spec.Requests; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		stats.Count++
		t0 := time.Now()
		reply, err := cl.Chat(ctx, llm.Request{Model: model, Messages: c.requestMessages(spec, i), MaxTokens: spec.MaxTokens,
			Temperature: &zero, Schema: raw, SchemaName: "claims", Timeout: spec.RequestTimeout.Duration})
		c.engineWait += time.Since(t0)
		if err != nil {
			stats.Errors++
			var ae *llm.APIError
			if errors.As(err, &ae) && ae.StatusCode >= 400 && ae.StatusCode < 500 {
				rejected = append(rejected, err.Error())
			} else {
				crashed = append(crashed, err.Error())
			}
			addDistinct(&stats.ErrorMessages, err.Error())
			continue
		}
		accepted++
		ttft = append(ttft, ms(reply.TTFT))
		lat = append(lat, ms(reply.Latency))
		stats.Samples = append(stats.Samples, truncate(reply.Text, 500))
		if verr := validateReply(sch, reply.Text); verr != nil {
			why := verr.Error()
			if reply.FinishReason == "length" {
				why += " (finish_reason length: cut off by max_tokens)"
			}
			failOpen = append(failOpen, why)
			addDistinct(&stats.ErrorMessages, "reply invalid: "+why)
			continue
		}
		valid++
	}
	stats.TTFT, stats.Latency = percentiles(ttft), percentiles(lat)
	switch {
	case len(crashed) > 0:
		g.Failure = c.requestFailure(errors.New(crashed[0]))
		g.Failure.Class = failure.ClassStructuredOutputCrash
		return fmt.Errorf("%d of %d structured requests got no valid answer from the server: %s", len(crashed), stats.Count, crashed[0])
	case len(rejected) > 0:
		g.Failure = &failure.Failure{Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference, RootCause: rejected[0]}
		return fmt.Errorf("the server rejected the schema in %d of %d requests: %s", len(rejected), stats.Count, rejected[0])
	case len(failOpen) > 0:
		root := failOpen[0]
		if line := c.logLineMatching(`(?i)grammar`); line != "" {
			root = line
		}
		g.Failure = &failure.Failure{Class: failure.ClassStructuredOutputFailOpen, Phase: failure.PhaseInference, RootCause: root}
		return fmt.Errorf("the server accepted the schema but %d of %d replies do not validate (fail-open): %s", len(failOpen), stats.Count, failOpen[0])
	}
	return nil
}

// logLineMatching returns the last line of the candidate's log tail that
// matches pattern, or "".
func (c *campaign) logLineMatching(pattern string) string {
	if c.proc == nil {
		return ""
	}
	re := regexp.MustCompile(pattern)
	b, err := os.ReadFile(c.proc.LogPath())
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if re.MatchString(lines[i]) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

func addDistinct(xs *[]string, s string) {
	for _, x := range *xs {
		if x == s {
			return
		}
	}
	if len(*xs) < 10 {
		*xs = append(*xs, truncate(s, 300))
	}
}

// validateReply parses text as JSON and validates it against sch.
func validateReply(sch *jsv.Schema, text string) error {
	v, err := jsv.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("does not validate: %s", oneLine(err.Error()))
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// --- sequential ------------------------------------------------------------

func (c *campaign) gateSequential(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	cl, model, err := c.candidateClient()
	if err != nil {
		return err
	}
	structured := spec.Structured == nil || *spec.Structured
	var raw json.RawMessage
	if structured && spec.Prompt == "" {
		raw = prompt.SchemaJSON()
	}
	stats := &evidence.RequestStats{}
	g.Requests = stats
	var ttft, lat, tpot []float64
	var tokens int
	var sumLatency time.Duration
	zero := 0.0
	for i := 0; i < spec.Requests; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.out.status("[%s] request %d/%d", spec.ID, i+1, spec.Requests)
		stats.Count++
		t0 := time.Now()
		reply, err := cl.Chat(ctx, llm.Request{Model: model, Messages: c.requestMessages(spec, i), MaxTokens: spec.MaxTokens,
			Temperature: &zero, Schema: raw, SchemaName: "claims", Timeout: spec.RequestTimeout.Duration})
		c.engineWait += time.Since(t0)
		if err != nil {
			stats.Errors++
			addDistinct(&stats.ErrorMessages, err.Error())
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		ttft = append(ttft, ms(reply.TTFT))
		lat = append(lat, ms(reply.Latency))
		sumLatency += reply.Latency
		if reply.HasUsage {
			tokens += reply.Usage.CompletionTokens
			if d := reply.TPOT(); d > 0 {
				tpot = append(tpot, ms(d))
			}
		}
		if i < 3 {
			stats.Samples = append(stats.Samples, truncate(reply.Text, 300))
		}
	}
	stats.TTFT, stats.Latency = percentiles(ttft), percentiles(lat)
	if sumLatency > 0 {
		stats.OutputTokensPerSecond = round3(float64(tokens) / sumLatency.Seconds())
	}
	if len(tpot) > 0 {
		var s float64
		for _, x := range tpot {
			s += x
		}
		stats.TPOTMS = round3(s / float64(len(tpot)))
	}
	if stats.Errors > 0 {
		g.Failure = c.requestFailure(errors.New(stats.ErrorMessages[0]))
		return fmt.Errorf("%d of %d sequential requests failed: %s", stats.Errors, stats.Count, stats.ErrorMessages[0])
	}
	return nil
}
