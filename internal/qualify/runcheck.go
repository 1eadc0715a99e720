package qualify

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// CheckRun refuses what a run of the plan would trip on that depends on
// this machine now rather than on the files LoadPlan checked, before
// anything is started or stopped: the API key of the candidate or of
// production that cannot be read (api_key_env unset or empty,
// api_key_file unreadable: the candidate's launch, or production's
// readiness checks, would fail on it, for an exclusive plan after
// production was stopped), and the candidate's port already held by a
// process other than production's (its launch would fail port_in_use),
// or the candidate already running from 'hiro backend start' or an
// earlier hiro (the launch gate would refuse it after the evidence
// folder was made: exit 3 where nothing needed to start).
// `hiro qualify --check` and the run call it; Run calls it first. Each
// error names the configuration's key, what was found and what to do.
func (p *Plan) CheckRun(cfg *config.Config) config.Errors {
	var es config.Errors
	cand := cfg.Backends[p.Candidate]
	var prod *config.Profile
	if p.Production != "" {
		prod, _ = production.ProfileFor(cfg, p.Production)
	}
	for _, role := range []struct {
		what string
		prof *config.Profile
	}{{"candidate", cand}, {"production", prod}} {
		if role.prof == nil {
			continue
		}
		if _, err := role.prof.APIKey(nil); err != nil {
			e, ok := err.(*config.Error)
			if !ok {
				e = &config.Error{Key: "backends." + role.prof.Name, Msg: err.Error()}
			}
			es = append(es, &PlanError{File: cfg.Path, Key: e.Key, Msg: fmt.Sprintf("%s, before running the campaign: without it hiro cannot reach %s %s (nothing was started or stopped)",
				strings.TrimSuffix(e.Msg, "."), role.what, role.prof.Name)})
		}
	}
	if cand != nil && !cand.Unmanaged && p.launches() {
		if err := candidateRunning(cfg, cand); err != nil {
			es = append(es, err)
		} else if err := candidatePortHeld(cfg, cand, prod, *p.Exclusive); err != nil {
			es = append(es, err)
		}
	}
	return es
}

// candidateRunning returns an error when hiro's state record says the
// candidate runs now and no live hiro holds its lease or watches it (a
// live campaign's candidate is refused by that lease instead, exit 6,
// naming it, or by CheckBusy when the campaign's lease is in another
// lease folder). A record whose process is gone is stale, not refused:
// the launch replaces it.
func candidateRunning(cfg *config.Config, cand *config.Profile) *config.Error {
	st, err := supervisor.Status(cfg.StateDir, cand.Name)
	if err != nil || st.Status != supervisor.StatusRunning || st.OwnerAlive() {
		return nil
	}
	if candidateLeaseHeld(cand) {
		return nil
	}
	return &PlanError{File: cfg.Path, Key: "backends." + cand.Name, Msg: fmt.Sprintf("candidate %s is already running (pid %d, started %s by 'hiro backend start' or an earlier hiro): a campaign launches its candidate itself; stop it with 'hiro backend stop %s' and rerun (nothing was started or stopped)%s",
		cand.Name, st.PID, st.StartedAt.Format(time.RFC3339), shellquote.Quote(cand.Name), stateHomeNote(cfg, cand.Name))}
}

// candidateLeaseHeld reports whether a live hiro holds the candidate's
// endpoint in this user's lease folder.
func candidateLeaseHeld(cand *config.Profile) bool {
	dir, err := lease.Dir()
	if err != nil {
		return false
	}
	for _, k := range production.LeaseKeys(false, cand) {
		if lease.HeldBy(dir, k) != nil {
			return true
		}
	}
	return false
}

// CheckBusy refuses a run whose candidate another live hiro launched and
// still watches (its state record's Owner, hiro's process with its start
// time) without holding the candidate's lease in this user's lease
// folder: a campaign started under another HOME (or HIRO_LEASE_DIR) with
// the same configuration shares the state_dir but not the leases. It
// returns a *CandidateInUseError (errors.Is lease.ErrHeld: exit 6, busy)
// naming that hiro, or nil. A candidate whose recorded process is gone,
// or that runs with no live hiro watching it, is CheckRun's.
func (p *Plan) CheckBusy(cfg *config.Config) error {
	cand := cfg.Backends[p.Candidate]
	if cand == nil || cand.Unmanaged || !p.launches() {
		return nil
	}
	st, err := supervisor.Status(cfg.StateDir, cand.Name)
	if err != nil || st.Status != supervisor.StatusRunning || !st.OwnerAlive() || candidateLeaseHeld(cand) {
		return nil
	}
	return &CandidateInUseError{Candidate: cand.Name, Record: st.Record}
}

// CheckLeases refuses, before anything is started or stopped, a run that
// Run would refuse for a lease another live hiro holds in dir: the keys
// Run takes (an exclusive plan: the accelerator and the endpoints of
// production and of a managed candidate; otherwise the candidate's
// endpoint, and the accelerator shared), probed without a lock
// (lease.Probe). It returns that *lease.HeldError (errors.Is
// lease.ErrHeld: exit 6), or nil. 'hiro qualify --check' runs it, so a
// script can learn that a campaign cannot start now before it starts
// anything of its own; Run still takes the leases itself.
func (p *Plan) CheckLeases(cfg *config.Config, dir string) error {
	cand, _ := cfg.Backend(p.Candidate)
	if cand != nil && cand.Unmanaged {
		cand = nil
	}
	if *p.Exclusive {
		var prod *config.Profile
		if p.Production != "" {
			prod, _ = production.ProfileFor(cfg, p.Production)
		}
		return lease.Probe(dir, production.LeaseKeys(true, cand, prod), nil)
	}
	if cand == nil {
		return nil
	}
	return lease.Probe(dir, production.LeaseKeys(false, cand), []string{lease.AcceleratorKey})
}

// CandidateInUseError says the candidate runs under another live hiro
// (Record.Owner) whose lease this hiro cannot see. errors.Is(err,
// lease.ErrHeld) is true: the command exits 6 (busy), nothing started or
// stopped.
type CandidateInUseError struct {
	Candidate string
	Record    supervisor.Record
}

func (e *CandidateInUseError) Error() string {
	o := e.Record.Owner
	restores := ""
	if strings.HasPrefix(o.What, "campaign ") {
		restores = " (a campaign restores production before it exits)"
	}
	return fmt.Sprintf("candidate %s is in use by %s (hiro pid %d), which launched it (pid %d, started %s) and still runs; its lease is in another lease folder (another HOME or HIRO_LEASE_DIR: campaigns of one user see each other only through one folder). Nothing was started or stopped: wait for it to finish, or stop it with kill -TERM %d%s, then run this again",
		e.Candidate, o.What, o.PID, e.Record.PID, e.Record.StartedAt.Format(time.RFC3339), o.PID, restores)
}

// Is makes errors.Is(err, lease.ErrHeld) true.
func (e *CandidateInUseError) Is(target error) bool { return target == lease.ErrHeld }

// launches reports whether the plan has a launch gate that runs.
func (p *Plan) launches() bool {
	for _, g := range p.Gates {
		if g != nil && g.Gate != nil && !g.Skip {
			if k, _ := LookupKind(g.Kind); k.Launches {
				return true
			}
		}
	}
	return false
}

// candidatePortHeld returns an error naming the candidate's port and
// what holds it when the candidate could not listen there now; nil when
// it is free, held by a candidate process hiro recorded (refused
// elsewhere, naming its owner), or held by production's own process
// group and the plan (exclusive) stops production first, which frees it.
func candidatePortHeld(cfg *config.Config, cand, prod *config.Profile, exclusive bool) *config.Error {
	u := supervisor.PortInUse(cand)
	if !u.Busy {
		return nil
	}
	key := "backends." + cand.Name + ".port"
	if cand.Port == 0 {
		key = "backends." + cand.Name + ".base_url"
	}
	if st, err := supervisor.Status(cfg.StateDir, cand.Name); err == nil && st.Status == supervisor.StatusRunning {
		// hiro's own candidate process: a live campaign's (its lease
		// refuses this one, naming it) or an earlier hiro's leftover (the
		// launch gate refuses it, before production is stopped).
		return nil
	}
	if exclusive && prod != nil && !prod.Unmanaged && len(u.Holders) > 0 {
		if st, err := supervisor.Status(cfg.StateDir, prod.Name); err == nil && st.Status == supervisor.StatusRunning {
			own := true
			for _, h := range u.Holders {
				own = own && h.PGID == st.PGID
			}
			if own {
				return nil
			}
		}
	}
	who := procfs.UnseenHolder()
	if len(u.Holders) > 0 {
		parts := make([]string, len(u.Holders))
		for i, h := range u.Holders {
			parts[i] = fmt.Sprintf("pid %d (%s)", h.PID, h.Comm)
		}
		who = strings.Join(parts, ", ")
	}
	return &PlanError{File: cfg.Path, Key: key, Msg: fmt.Sprintf("candidate %s's address %s is already in use (%s), held by %s: its launch would fail (port_in_use); stop that process or give the candidate another port, then rerun (nothing was started or stopped)",
		cand.Name, u.Addr, u.Why, who)}
}

// stateHomeNote says, about the candidate, which state home named
// production for this check: a candidate that is production under
// another state home is not told apart from a leftover here (issue 26
// G15). It is a sentence of its own, naming the candidate, so that it
// does not read as a second problem (trial 10 Q2).
func stateHomeNote(cfg *config.Config, cand string) string {
	d, err := production.Dir()
	if err != nil {
		return ""
	}
	prod := ""
	if a, err := production.Resolve(cfg); err == nil && a != nil && a.Profile != nil {
		prod = " " + a.Profile.Name
	}
	return fmt.Sprintf(". (This state home, %s, records%s as production; only if %s is production under another state home, run this with HIRO_STATE_HOME set to that one instead of stopping it.)", filepath.Dir(d), prod, cand)
}
