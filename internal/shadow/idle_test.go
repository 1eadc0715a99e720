package shadow

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
)

// idleCandidate is a candidate that counts the requests it received and
// runs before (when not nil) before it answers.
func idleCandidate(t *testing.T, got *atomic.Int64, before func()) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		if before != nil {
			before()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startGated starts a run to srv whose gate reads busy and waits up to
// max for an idle moment.
func startGated(t *testing.T, srv *httptest.Server, busy *atomic.Int64, max time.Duration) *Mirror {
	t.Helper()
	return startGatedWith(t, srv, busy, Config{Share: 1, IdleWait: config.Duration{Duration: max}})
}

func startGatedWith(t *testing.T, srv *httptest.Server, busy *atomic.Int64, cfg Config) *Mirror {
	t.Helper()
	m, err := StartWith(cfg, &config.Profile{Name: "cand", BaseURL: srv.URL, Model: "m"}, "prod", nil, busy.Load)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func offerOne(t *testing.T, m *Mirror) {
	t.Helper()
	if !m.Sample() {
		t.Fatal("not sampled at share 1")
	}
	j := &Job{Route: "/v1/chat/completions", Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}
	j.Capture([]byte(`{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
	j.Done(200, time.Millisecond, time.Millisecond)
	m.Offer(j)
}

func waitPairs(t *testing.T, m *Mirror, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.Result().Pairs < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if p := m.Result().Pairs; p < n {
		t.Fatalf("%d pairs scored, want %d", p, n)
	}
}

// TestIdleGateHoldsTheSend: while the router has a client request in
// flight, the mirror sends nothing; once it is idle (Idle) the request
// is sent and the pair scored.
func TestIdleGateHoldsTheSend(t *testing.T) {
	var got, busy atomic.Int64
	m := startGated(t, idleCandidate(t, &got, nil), &busy, time.Minute)
	defer m.Stop()
	busy.Store(1)
	offerOne(t, m)
	time.Sleep(200 * time.Millisecond) // many dispatcher ticks
	if n := got.Load(); n != 0 {
		t.Fatalf("the candidate got %d requests while the router was busy", n)
	}
	busy.Store(0)
	m.Idle()
	waitPairs(t, m, 1)
}

// TestIdleGateHoldsTheScoring: a candidate's answer that came while the
// router is busy is scored once the router is idle, not before.
func TestIdleGateHoldsTheScoring(t *testing.T) {
	var got, busy atomic.Int64
	m := startGated(t, idleCandidate(t, &got, func() { busy.Store(1) }), &busy, time.Minute)
	defer m.Stop()
	offerOne(t, m)
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if p := m.Result().Pairs; p != 0 {
		t.Fatalf("%d pairs scored while the router was busy", p)
	}
	busy.Store(0)
	m.Idle()
	waitPairs(t, m, 1)
}

// TestIdleGateUnderLoad: a router never idle still gets every sampled
// request mirrored and scored (the wait is bounded), and the gate stays
// open until the router is next idle.
func TestIdleGateUnderLoad(t *testing.T) {
	var got, busy atomic.Int64
	m := startGated(t, idleCandidate(t, &got, nil), &busy, 20*time.Millisecond)
	defer m.Stop()
	busy.Store(1)
	for range 5 {
		offerOne(t, m)
	}
	waitPairs(t, m, 5)
	if !m.gate.loaded.Load() {
		t.Fatal("the gate did not open after a wait ran out")
	}
	m.Idle()
	if m.gate.loaded.Load() {
		t.Fatal("an idle moment did not close the gate")
	}
	if r := m.Result(); r.Dropped != 0 || r.Unsent != 0 {
		t.Fatalf("dropped %d, unsent %d", r.Dropped, r.Unsent)
	}
}

// TestIdleGateStopAccounts: a stop while a request waits at the gate
// returns at once and accounts it (mirrored, not scored).
func TestIdleGateStopAccounts(t *testing.T) {
	var got, busy atomic.Int64
	m := startGated(t, idleCandidate(t, &got, nil), &busy, time.Minute)
	busy.Store(1)
	offerOne(t, m)
	deadline := time.Now().Add(10 * time.Second)
	for m.mirrored.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	done := make(chan *Result, 1)
	go func() { done <- m.Stop() }()
	select {
	case r := <-done:
		if r.Mirrored != 1 || r.Pairs != 0 || r.Pending != 0 || got.Load() != 0 {
			t.Fatalf("after stop: mirrored %d, pairs %d, pending %d, sent %d", r.Mirrored, r.Pairs, r.Pending, got.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stop waited on the gate")
	}
}

// TestIdleGateBacklog: while the queue is at least half full the mirror
// works without waiting for the router to be idle.
func TestIdleGateBacklog(t *testing.T) {
	var got, busy atomic.Int64
	busy.Store(1)
	m := startGatedWith(t, idleCandidate(t, &got, nil), &busy, Config{Share: 1, QueueSize: 4, Workers: 1, IdleWait: config.Duration{Duration: time.Minute}})
	defer m.Stop()
	// The queue full (4): the worker's job and the dispatcher's leave 2
	// queued, half the queue, so the worker goes on; then 1, and it waits.
	for range 4 {
		offerOne(t, m)
	}
	waitPairs(t, m, 1)
	if r := m.Result(); r.Dropped != 0 {
		t.Fatalf("dropped %d", r.Dropped)
	}
}
