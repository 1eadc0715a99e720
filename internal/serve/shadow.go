package serve

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/shadow"
)

// Shadow traffic (docs/shadow.md): a sampled share of production's chat
// and completion requests mirrored to a running candidate, scored by
// package shadow. The front door's cost is an atomic load per request
// while no run is active; a sampled request has its body copied and its
// reply kept (up to shadow.MaxCapture) as it passes to the client, and is
// offered to the mirror's bounded queue once production's answer is
// complete: the client never waits on the candidate.

// shadowState holds the active run (run: nil when none, read on every
// request) and the last one's account for status.
type shadowState struct {
	run  atomic.Pointer[shadow.Mirror]
	mu   sync.Mutex
	last *shadow.Mirror
}

// sampleShadow returns the active run when this production request is
// to be mirrored (chat and completions only).
func (s *Server) sampleShadow(route string) *shadow.Mirror {
	m := s.shadow.run.Load()
	if m == nil || route == RouteEmbeddings || !m.Sample() {
		return nil
	}
	return m
}

// offerShadow hands a finished exchange to its run: production's answer
// is complete. A client that left (499) or a reply cut by the router's
// stop is no pair.
func (x *exchange) offerShadow() {
	if x.status == 499 || x.errClass == "stopped" {
		x.mirror.Abandon(x.mirrorJob)
		return
	}
	x.mirrorJob.Done(x.status, x.ttfb, time.Since(x.start))
	x.mirror.Offer(x.mirrorJob)
}

// shadowIdle tells the active run, if any, that the router has no
// client request in flight (finish, once the last one's answer is
// written): the mirror's waiting work runs now, in the gap before the
// next request, rather than beside one (shadow.idleGate).
func (s *Server) shadowIdle() {
	if m := s.shadow.run.Load(); m != nil {
		m.Idle()
	}
}

// startShadow checks and starts a run (see control.ShadowStartRequest): the
// candidate is not production, answers /v1/models, is on this machine or
// opted in with shadow_remote, and does not need the accelerator alone
// beside a production on this machine. One run at a time.
func (s *Server) startShadow(ctx context.Context, req control.ShadowStartRequest) (*control.ShadowStatus, int, error) {
	prof, code, err := s.besideProduction(req.Candidate, req.Effective, "shadow traffic goes to another backend")
	if err != nil {
		return nil, code, err
	}
	prod := s.prod.current()
	if shadow.Remote(prof) && !prof.ShadowRemote {
		return nil, http.StatusConflict, fmt.Errorf("%w: backend %s (%s) is not on this machine and mirroring sends users' prompts to it; set shadow_remote = true in [backends.%s] to allow it", shadow.ErrRemoteNotAllowed, prof.Name, prof.BaseURL, prof.Name)
	}
	if prof.ExclusiveAccelerator && !shadow.Remote(prof) {
		return nil, http.StatusConflict, fmt.Errorf("backend %s needs the accelerator alone (exclusive_accelerator): it cannot run beside production on this machine, so shadow traffic is impossible here; qualify it on the frozen corpus (a semantic gate), or serve it on a second machine and mirror to that endpoint (an unmanaged profile with shadow_remote = true)", prof.Name)
	}
	if err := s.candidateAnswers(ctx, prof); err != nil {
		return nil, http.StatusConflict, err
	}
	s.shadow.mu.Lock()
	defer s.shadow.mu.Unlock()
	if cur := s.shadow.run.Load(); cur != nil {
		select {
		case <-cur.Done():
		default:
			return nil, http.StatusConflict, fmt.Errorf("a shadow run to %s is active; stop it first (hiro shadow stop)", cur.Candidate())
		}
	}
	tr, err := s.candidateTransport(prof)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	// The mirror's work waits for moments without a client request in
	// flight (finish calls Idle), unless HIRO_SHADOW_IDLE_WAIT=0.
	var busy func() int64
	if os.Getenv(shadow.IdleWaitEnv) != "0" {
		busy = s.inFlight.Load
	}
	m, err := shadow.StartWith(req.Config, prof, prod.name, tr, busy)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	s.shadow.last = m
	s.shadow.run.Store(m)
	detail := map[string]any{"candidate": prof.Name, "share": req.Share, "remote": m.Remote()}
	if m.Remote() {
		detail["base_url"] = prof.BaseURL
	}
	s.event("shadow_start", detail)
	go func() {
		<-m.Done()
		s.shadow.run.CompareAndSwap(m, nil)
		// The final account, computed once (a stop's caller waits for the
		// same one): a second bootstrap over every pair would run beside
		// the clients' requests.
		r := m.Stop()
		s.event("shadow_end", map[string]any{"candidate": r.Candidate, "ended": r.Ended, "pairs": r.Pairs, "dropped": r.Dropped, "outcome": r.Outcome})
	}()
	return &control.ShadowStatus{Active: true, Result: m.Result()}, 0, nil
}

// besideProduction resolves the backend a shadow run or a ramp sends
// production's requests to: effective when given (a campaign's
// candidate with its variant), else the configuration's profile name;
// production itself is refused (why says what goes elsewhere).
func (s *Server) besideProduction(name string, effective *config.Profile, why string) (*config.Profile, int, error) {
	prof := effective
	if prof == nil {
		prof = s.cfg.Backends[name]
	}
	if prof == nil {
		return nil, http.StatusNotFound, fmt.Errorf("no backend profile %q in %s; name one of its [backends]", name, s.cfg.Path)
	}
	if prof.Name == "" {
		prof.Name = name
	}
	prod := s.prod.current()
	// One server may serve several models (Ollama): the same address with
	// another model is another backend.
	if prof.Name == prod.name || (strings.TrimSuffix(prof.BaseURL, "/") == strings.TrimSuffix(prod.prof.BaseURL, "/") && prof.Model == prod.prof.Model) {
		return nil, http.StatusConflict, fmt.Errorf("backend %s is production: %s", prof.Name, why)
	}
	return prof, 0, nil
}

// candidateAnswers checks that prof's server answers GET /v1/models (a
// running backend, managed by hiro or not) within 5 s.
func (s *Server) candidateAnswers(ctx context.Context, prof *config.Profile) error {
	hc, err := llm.HTTPClient(prof)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(prof.BaseURL, "/")+RouteModels, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("backend %s (%s) does not answer (%s): start it first (hiro backend start %s)", prof.Name, prof.BaseURL, upstreamErrorClass(ctx, err), prof.Name)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("backend %s answered GET %s with HTTP %d: it is not ready for shadow traffic", prof.Name, RouteModels, resp.StatusCode)
	}
	return nil
}

// shadowStatus is the active run's account, else the last run's.
func (s *Server) shadowStatus() *control.ShadowStatus {
	s.shadow.mu.Lock()
	m := s.shadow.last
	s.shadow.mu.Unlock()
	if m == nil {
		return &control.ShadowStatus{}
	}
	st := &control.ShadowStatus{Active: true}
	select {
	case <-m.Done():
		st.Active = false
	default:
	}
	st.Result = m.Result() // after the check: an ended run's account is whole
	return st
}

// stopShadow ends the active run and returns its account; 404 when none
// ran since the router started.
func (s *Server) stopShadow() (*control.ShadowStatus, int, error) {
	s.shadow.mu.Lock()
	m := s.shadow.last
	s.shadow.mu.Unlock()
	if m == nil {
		return nil, http.StatusNotFound, fmt.Errorf("no shadow run since this router started; start one with hiro shadow start CANDIDATE")
	}
	s.shadow.run.CompareAndSwap(m, nil)
	return &control.ShadowStatus{Result: m.Stop()}, 0, nil
}

// shadowRoutes adds the control socket's shadow routes:
//
//	POST /v1/shadow/start control.ShadowStartRequest → ShadowStatus
//	POST /v1/shadow/stop                     → ShadowStatus (the account)
//	GET  /v1/shadow/status                   → ShadowStatus
func (s *Server) shadowRoutes(mux *http.ServeMux, c controlFuncs) {
	mux.HandleFunc("POST /v1/shadow/start", jsonRoute(c, s.startShadow))
	mux.HandleFunc("POST /v1/shadow/stop", jsonRoute(c, func(context.Context, struct{}) (*control.ShadowStatus, int, error) { return s.stopShadow() }))
	mux.HandleFunc("GET /v1/shadow/status", func(w http.ResponseWriter, r *http.Request) { c.reply(w, 200, s.shadowStatus()) })
}

// candidateTransport is what a shadow run's requests to prof go through:
// the router's own upstream transport (one pool, the request written and
// its answer read on the mirror's worker: no reader and writer goroutines
// per connection, which on the clients' processor made them wait), with
// prof's key attached as its route would (newRoute: an https backend's
// transport attaches its key and CA itself). Errors are the profile's key
// or CA file problems.
func (s *Server) candidateTransport(prof *config.Profile) (http.RoundTripper, error) {
	rt, err := newRoute(prof, s.tr, nil)
	if err != nil {
		return nil, err
	}
	if rt.upstreamKey == "" {
		return rt.tr, nil
	}
	return keyedTransport{tr: rt.tr, key: rt.upstreamKey}, nil
}

// keyedTransport sets "Authorization" to key on every request it sends
// through tr (the mirror sends no header of the client's).
type keyedTransport struct {
	tr  http.RoundTripper
	key string
}

func (k keyedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", k.key)
	return k.tr.RoundTrip(req)
}
