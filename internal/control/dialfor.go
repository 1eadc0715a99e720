package control

import (
	"context"
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/lease"
)

// DialFor connects to the user's running router (its control socket in
// Dir) when it serves the configuration file cfgPath, or, when
// prodURLs are given, when the production it serves is at one of those
// endpoints (same host and port as lease.ProductionKey compares them:
// another configuration file naming the same production server). It
// returns the client with the router's status. Errors wrap ErrNoRouter
// when no router runs, or the one running serves another configuration
// and another production: callers (activation, a campaign's hand-over)
// then act on production themselves.
func DialFor(ctx context.Context, cfgPath string, prodURLs ...string) (*Client, *Status, error) {
	dir, err := Dir()
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
	if st.Config == cfgPath {
		return c, st, nil
	}
	if st.Production.BaseURL != "" {
		key := lease.ProductionKey(st.Production.BaseURL)
		for _, u := range prodURLs {
			if u != "" && lease.ProductionKey(u) == key {
				return c, st, nil
			}
		}
	}
	c.Close()
	return nil, nil, fmt.Errorf("%w for %s (the running one serves %s, production %s at %s)", ErrNoRouter, cfgPath, st.Config, st.Production.Name, st.Production.BaseURL)
}
