package production

import (
	"os"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/private"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/lease"
)

// SwitchedElsewhere returns the newest switch recorded for another
// configuration file that moved production away from a (cfg's active
// production) to a server at another endpoint: the other file's latest
// switched record, when one of its records starts from or goes to a's
// endpoint (lease.ProductionKey), its new production is elsewhere, and it
// finished after a's own record (any time when a is cfg's [production]).
// Records are kept per configuration file, so a router of cfg resumes a
// and not that switch; nil when there is none. Unreadable folders and
// records are skipped: this is a warning, not a check.
func SwitchedElsewhere(cfg *config.Config, a *Active) *Record {
	if a == nil || a.Profile == nil {
		return nil
	}
	base, err := private.Production.Check()
	if err != nil {
		return nil
	}
	own, _ := configDir(cfg.Path, false)
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	key := lease.ProductionKey(a.Profile.BaseURL)
	endpoint := func(s *Snapshot) string {
		if s == nil || s.Profile == nil {
			return ""
		}
		return lease.ProductionKey(s.Profile.BaseURL)
	}
	var newest *Record
	for _, e := range ents {
		if !e.IsDir() || filepath.Join(base, e.Name()) == own {
			continue
		}
		recs, err := historyIn(filepath.Join(base, e.Name()))
		if err != nil || len(recs) == 0 || recs[0].Config == cfg.Path {
			continue
		}
		var last *Record
		touches := false
		for _, r := range recs {
			if endpoint(r.From) == key || endpoint(r.To) == key {
				touches = true
			}
			if r.Outcome == OutcomeSwitched {
				last = r
			}
		}
		if !touches || last == nil || endpoint(last.To) == key {
			continue
		}
		if a.Record != nil && !last.FinishedAt.After(a.Record.FinishedAt) {
			continue
		}
		if newest == nil || last.FinishedAt.After(newest.FinishedAt) {
			newest = last
		}
	}
	return newest
}
