package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/lease"
)

// drain refuses new requests and waits up to timeout for in-flight ones.
func (s *Server) drain(ctx context.Context, timeout time.Duration) control.DrainResult {
	s.draining.Store(true)
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.inFlight.Load() > 0 {
		select {
		case <-ctx.Done():
		case <-deadline.C:
		case <-tick.C:
			continue
		}
		break
	}
	n := s.inFlight.Load()
	return control.DrainResult{Drained: n == 0, InFlight: n, WaitedMS: time.Since(start).Milliseconds()}
}

// Status returns the router's status.
func (s *Server) Status() control.Status {
	st := control.Status{Schema: control.StatusSchema, PID: os.Getpid(), StartedAt: s.started, Config: s.cfg.Path, Listen: s.addr,
		Alias: s.sc.Alias, InFlight: s.inFlight.Load(), Draining: s.draining.Load(), Models: s.modelNames()}
	st.Production, st.Handover = s.prod.status()
	st.Ramp = s.rampStatus()
	for _, rt := range s.served {
		state, since, msg, last := rt.watch.snapshot()
		if state == "" {
			state, since, msg = control.StateStarting, s.started, "served as is; not checked yet"
		}
		st.Served = append(st.Served, control.BackendStatus{Name: rt.name, Engine: rt.prof.Engine, BaseURL: rt.prof.BaseURL,
			Model: rt.prof.Model, Managed: false, State: state, Since: since, Message: msg, LastHealth: last})
	}
	return st
}

// listenControl opens the control socket (0600 in a 0700 folder). A
// socket left by a dead router is removed; a live one is an error.
func (s *Server) listenControl() (net.Listener, error) {
	if err := control.EnsureDir(s.ctlDir); err != nil {
		return nil, err
	}
	path := control.SocketPath(s.ctlDir)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, busyError{fmt.Errorf("serve: %s answers on %s: one router runs per user at a time; stop it first, or, for a trial beside it, give this router a state home of its own (its own control socket and production records): HIRO_STATE_HOME=DIR hiro serve", otherRouter(s.ctlDir), path)}
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("serve: control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("serve: control socket %s: %w", path, err)
	}
	return ln, nil
}

// controlFuncs are the control socket's reply, error and body decoding
// (controlHandler defines them).
type controlFuncs struct {
	reply  func(http.ResponseWriter, int, any)
	fail   func(http.ResponseWriter, int, string, ...any)
	decode func(http.ResponseWriter, *http.Request, any) bool
}

// jsonRoute is a control route whose body decodes into a Req: it answers
// f's value, or f's error with f's status code.
func jsonRoute[Req, Resp any](c controlFuncs, f func(ctx context.Context, req Req) (Resp, int, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if !c.decode(w, r, &req) {
			return
		}
		v, code, err := f(r.Context(), req)
		if err != nil {
			c.fail(w, code, "%v", err)
			return
		}
		c.reply(w, 200, v)
	}
}

// otherRouter names the router answering on dir's control socket: its
// pid, configuration and production, or "another hiro serve" when it does
// not say.
func otherRouter(dir string) string {
	c, err := control.Dial(dir)
	if err != nil {
		return "another hiro serve"
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return "another hiro serve"
	}
	return fmt.Sprintf("hiro serve pid %d (configuration %s, production %s at %s)", st.PID, st.Config, st.Production.Name, st.Production.BaseURL)
}

func (s *Server) controlHandler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	}
	fail := func(w http.ResponseWriter, code int, format string, a ...any) {
		reply(w, code, map[string]string{"error": fmt.Sprintf(format, a...)})
	}
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			fail(w, http.StatusBadRequest, "bad request body: %v", err)
			return false
		}
		return true
	}
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, s.Status()) })
	mux.HandleFunc("POST /v1/drain", func(w http.ResponseWriter, r *http.Request) {
		var req control.DrainRequest
		if !decode(w, r, &req) {
			return
		}
		d := time.Duration(req.TimeoutMS) * time.Millisecond
		if d <= 0 {
			d = s.sc.DrainTimeout.Duration
		}
		s.event("drain", map[string]any{"timeout": d.String()})
		reply(w, 200, s.drain(r.Context(), d))
	})
	mux.HandleFunc("POST /v1/resume", func(w http.ResponseWriter, r *http.Request) {
		if s.prod.handedOver() {
			fail(w, http.StatusConflict, "production is handed over to a campaign; it resumes with take back")
			return
		}
		s.draining.Store(false)
		s.event("resume", nil)
		reply(w, 200, s.Status())
	})
	mux.HandleFunc("POST /v1/handover", func(w http.ResponseWriter, r *http.Request) {
		var req control.HandoverRequest
		if !decode(w, r, &req) {
			return
		}
		if strings.TrimSpace(req.Campaign) == "" || req.LeaseOwnerPID <= 0 {
			fail(w, http.StatusBadRequest, "handover needs campaign and lease_owner_pid")
			return
		}
		d := time.Duration(req.TimeoutMS) * time.Millisecond
		if d <= 0 {
			d = s.sc.DrainTimeout.Duration
		}
		res, code, err := s.prod.handOver(r.Context(), req.Campaign, req.LeaseOwnerPID, d)
		if err != nil {
			fail(w, code, "%v", err)
			return
		}
		reply(w, 200, res)
	})
	mux.HandleFunc("POST /v1/takeback", func(w http.ResponseWriter, r *http.Request) {
		var req control.TakebackRequest
		if !decode(w, r, &req) {
			return
		}
		v, code, err := s.prod.takeback(r.Context(), req.Campaign)
		if err != nil {
			fail(w, code, "%v", err)
			return
		}
		reply(w, 200, v)
	})
	mux.HandleFunc("POST /v1/switch", func(w http.ResponseWriter, r *http.Request) {
		var req control.SwitchRequest
		if !decode(w, r, &req) {
			return
		}
		res, code, err := s.prod.switchTo(r.Context(), req.Profile, req.Effective, req.Campaign)
		if err != nil {
			fail(w, code, "%v", err)
			return
		}
		reply(w, 200, res)
	})
	c := controlFuncs{reply: reply, fail: fail, decode: decode}
	s.shadowRoutes(mux, c)
	s.rampRoutes(mux, c)
	return mux
}

// busyError is a refusal because another router already serves (its
// control socket answers, or it holds production's router lease):
// errors.Is(err, lease.ErrHeld) is true, so hiro serve exits 6 (busy)
// for each way of finding it, as for a router under another HOME
// (RouterElsewhereError).
type busyError struct{ error }

// Is makes errors.Is(err, lease.ErrHeld) true.
func (busyError) Is(target error) bool { return target == lease.ErrHeld }

// Unwrap returns the refusal itself.
func (e busyError) Unwrap() error { return e.error }
