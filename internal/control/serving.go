package control

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hiro-dev/hiro/internal/lease"
)

// ServingRouter is a live `hiro serve` whose production is at a given
// endpoint.
type ServingRouter struct {
	// PID is the router's; Config its configuration file; Socket its
	// control socket ("" when only its lease was found).
	PID    int
	Config string
	Socket string
	// Production is the profile it serves as production; State
	// production's state as the router said it ("" when only its lease
	// was found: the router did not answer).
	Production string
	State      State
}

// String names the router for a message: pid, configuration, socket.
func (r *ServingRouter) String() string {
	s := fmt.Sprintf("hiro serve pid %d (configuration %s", r.PID, r.Config)
	if r.Socket != "" {
		s += ", control socket " + r.Socket
	}
	return s + ")"
}

// RouterServing returns the live router that serves the server at
// baseURL as production, nil when none does. It asks the router of this
// state home (Dir), then every live router's control socket named in
// its lease (a router started under another HIRO_STATE_HOME: leases are
// the user's whatever the state home), and last the router lease of the
// endpoint itself (lease.RouterKey, held for the production a router
// started with).
func RouterServing(ctx context.Context, baseURL string) *ServingRouter {
	key := lease.ProductionKey(baseURL)
	answered := map[string]bool{}
	ask := func(dir string) *ServingRouter {
		c, err := Dial(dir)
		if err != nil {
			return nil
		}
		defer c.Close()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		st, err := c.Status(cctx)
		if err != nil {
			return nil
		}
		answered[SocketPath(dir)] = true
		if lease.ProductionKey(st.Production.BaseURL) != key {
			return nil
		}
		return &ServingRouter{PID: st.PID, Config: st.Config, Socket: SocketPath(dir), Production: st.Production.Name, State: st.Production.State}
	}
	asked := map[string]bool{}
	if dir, err := Dir(); err == nil {
		asked[SocketPath(dir)] = true
		if r := ask(dir); r != nil {
			return r
		}
	}
	dir, err := lease.Dir()
	if err != nil {
		return nil
	}
	ls, _ := lease.List(dir)
	for _, l := range ls {
		if l.Control == "" || asked[l.Control] || !l.OwnerAlive() {
			continue
		}
		asked[l.Control] = true
		if r := ask(filepath.Dir(l.Control)); r != nil {
			return r
		}
	}
	if l := lease.HeldBy(dir, lease.RouterKey(baseURL)); l != nil && !answered[l.Control] {
		// A router that answered serves another production now (a switch).
		return &ServingRouter{PID: l.PID, Config: l.Config, Socket: l.Control, Production: l.Production}
	}
	return nil
}
