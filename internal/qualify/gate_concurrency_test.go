package qualify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// TestGateConcurrencyAlone runs the concurrency gate alone against the
// fake engine: 8 requests 4 at a time pass with throughput and latency
// percentiles recorded; once the engine is gone, every request fails and
// so does the gate, classified by package engine.
func TestGateConcurrencyAlone(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"concurrency\"\nconcurrency = 4\nrequests = 8\nrequest_timeout = \"5s\"\n")
	p, cfg, err := qualify.LoadPlan(plan, e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Gates[1]
	if spec.DisplayTitle() != "Concurrent requests" {
		t.Errorf("title %q", spec.DisplayTitle())
	}
	h := qualify.NewHandle(cfg.Backends["cand"], cfg.Backends["prod"], cfg.StateDir, t.TempDir(), nil)
	proc, res := supervisor.Start(context.Background(), cfg.Backends["cand"], supervisor.Options{StateDir: cfg.StateDir})
	if res.State != supervisor.StateReady {
		t.Fatalf("candidate did not start: %+v", res.Failure)
	}
	defer proc.Stop(context.Background())
	h.SetReady(&qualify.Ready{Profile: cfg.Backends["cand"], Proc: proc})

	var g evidence.Gate
	if err := spec.Gate.Run(context.Background(), h, &g); err != nil {
		t.Fatal(err)
	}
	r := g.Requests
	if r == nil || r.Count != 8 || r.Errors != 0 || r.Concurrency != 4 || r.Latency == nil || r.TTFT == nil || r.RequestsPerSecond <= 0 || r.WallMS < 0 {
		t.Fatalf("stats %+v", r)
	}
	if r.Latency.P50 > r.Latency.P95 || r.Latency.P95 > r.Latency.Max {
		t.Errorf("percentiles out of order: %+v", r.Latency)
	}

	proc.Stop(context.Background())
	g = evidence.Gate{}
	err = spec.Gate.Run(context.Background(), h, &g)
	if err == nil || !strings.Contains(err.Error(), "8 of 8 concurrent requests") {
		t.Fatalf("err %v, want every request failed", err)
	}
	if g.Failure == nil || g.Failure.Class != failure.ClassEngineDied || g.Failure.Phase != failure.PhaseInference {
		t.Errorf("failure %+v", g.Failure)
	}
}

func TestGateConcurrencyValidate(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	for _, c := range []struct{ gate, want string }{
		{"concurrency = -4", "gates[1].concurrency: -4"},
		{"concurrency = 8\nrequests = 2", "gates[1].requests: 2 is fewer than concurrency 8"},
		{"max_tokens = 2147483648000", "gates[1].max_tokens"},
		{"request_timeout = \"-1s\"", "gates[1].request_timeout"},
		{"schema = \"x.json\"", "gates[1].schema: unknown key for a concurrency gate"},
	} {
		plan := e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"concurrency\"\n" + c.gate + "\n")
		if _, _, err := qualify.LoadPlan(plan, e.cfgPath); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.gate, err, c.want)
		}
	}
}
