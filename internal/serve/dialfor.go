package serve

import (
	"context"
	"fmt"
	"time"
)

// DialFor connects to the user's running router (its control socket in
// ControlDir) when it serves the configuration file cfgPath, and returns
// the client with the router's status. Errors wrap ErrNoRouter when no
// router runs, or the one running serves another configuration: callers
// (activation, a campaign's hand-over) then act on production themselves.
func DialFor(ctx context.Context, cfgPath string) (*ControlClient, *Status, error) {
	dir, err := ControlDir()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNoRouter, err)
	}
	c, err := Dial(dir)
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := c.Status(sctx)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if st.Config != cfgPath {
		c.Close()
		return nil, nil, fmt.Errorf("%w for %s (the running one serves %s)", ErrNoRouter, cfgPath, st.Config)
	}
	return c, st, nil
}
