package activation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/ramp"
)

// Router is a running router's control, as far as a switch needs it.
type Router interface {
	// Hold asks the router to drain and hand production over to this
	// switch (in-flight requests finish, new ones get 503 + Retry-After,
	// a managed production is stopped by the router). If this hiro dies,
	// the router takes production back by itself.
	Hold(ctx context.Context, holder string) error
	// Switch points the router at prof, already started and verified; it
	// ends a Hold.
	Switch(ctx context.Context, prof *config.Profile) error
	// Release ends a Hold without a switch: the router starts its
	// production again and verifies it.
	Release(ctx context.Context) *evidence.Restored
	// Held says whether a Hold is in force.
	Held() bool
	// Ramp ramps production's requests to prof (started and verified)
	// step by step under pol and follows it to its end (ramp.go);
	// StopRamp ends it, every request back on production; ReverseRamp
	// ends even a completed one, as reversed (its candidate failed before
	// the switch).
	Ramp(ctx context.Context, prof *config.Profile, pol ramp.Policy, progress func(string)) (*evidence.RampResult, error)
	StopRamp(ctx context.Context, reason string) (*evidence.RampResult, error)
	ReverseRamp(ctx context.Context, reason string) (*evidence.RampResult, error)
}

// RouterFor returns the running router of cfg's production (its control
// socket in control.ControlDir): the one serving cfg's file, or one serving
// production's endpoint through another configuration file (control.DialFor
// compares host and port). It returns nil when none runs or the one
// running serves another configuration and another production.
func RouterFor(ctx context.Context, cfg *config.Config) Router {
	var urls []string
	if a, err := production.Resolve(cfg); err == nil && a != nil && a.Profile != nil {
		urls = append(urls, a.Profile.BaseURL)
	}
	if p, err := cfg.Backend(cfg.Production.Backend); err == nil {
		urls = append(urls, p.BaseURL)
	}
	c, _, err := control.DialFor(ctx, cfg.Path, urls...)
	if err != nil {
		return nil
	}
	return &controlRouter{c: c}
}

// controlRouter is Router over the router's control socket.
type controlRouter struct {
	c      *control.Client
	holder string
}

func (r *controlRouter) Held() bool { return r.holder != "" }

func (r *controlRouter) Hold(ctx context.Context, holder string) error {
	if _, err := r.c.Handover(ctx, holder, os.Getpid()); err != nil {
		return err
	}
	r.holder = holder
	return nil
}

func (r *controlRouter) Switch(ctx context.Context, prof *config.Profile) error {
	var err error
	if r.holder != "" {
		_, err = r.c.SwitchHandedOver(ctx, r.holder, prof.Name, prof)
	} else {
		_, err = r.c.Switch(ctx, prof.Name, prof)
	}
	if err == nil {
		r.holder = ""
	}
	return err
}

func (r *controlRouter) Release(ctx context.Context) *evidence.Restored {
	now := time.Now().UTC()
	if r.holder == "" {
		return &evidence.Restored{Error: "nothing held", At: &now}
	}
	v, err := r.c.Takeback(ctx, r.holder)
	r.holder = ""
	return control.Verified(v, err)
}

// takeBack asks cfg's running router, if any, to take production back
// from holder (a switch whose hiro died); ok false when no router runs or
// it could not.
func takeBack(ctx context.Context, cfg *config.Config, holder string) (*evidence.Restored, bool) {
	r, _ := RouterFor(ctx, cfg).(*controlRouter)
	if r == nil {
		return nil, false
	}
	v, err := r.c.Takeback(ctx, holder)
	var ce *control.Error
	if errors.As(err, &ce) && ce.StatusCode == 409 {
		return nil, false
	}
	rr := control.Verified(v, err)
	if !rr.OK {
		rr.Error = fmt.Sprintf("the router could not take production back: %s", rr.Error)
	}
	return rr, rr.OK
}
