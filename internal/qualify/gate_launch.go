package qualify

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// KindLaunch starts the candidate and reaches ready, walking the attempt
// ladder.
const KindLaunch = "launch"

func init() {
	RegisterKind(Kind{Name: KindLaunch, Rank: 30, Title: "Backend startup", Launches: true, New: func() Gate { return &LaunchGate{} }})
}

// LaunchGate is a launch gate's section: the attempt ladder, tried in
// order until one attempt reaches ready: the candidate profile as it is
// ("base"), then each variant, at most max_attempts attempts. Its result
// is one evidence.Attempt per attempt made.
type LaunchGate struct {
	// MaxAttempts bounds the ladder; default every rung (base + variants).
	MaxAttempts int `toml:"max_attempts"`
	// Variants are the declared fallbacks, in order.
	Variants []*Variant `toml:"variants"`
}

// Variant is one documented fallback of the attempt ladder: changes to
// the base profile (or to the variant named in BasedOn) with a reason.
type Variant struct {
	// Name names the rung in the evidence ("base" is the profile as it is).
	Name string `toml:"name"`
	// Reason is the written reason for the fallback (required), e.g.
	// "documented fallback: V1 runner".
	Reason string `toml:"reason"`
	// BasedOn names an earlier variant this one changes; default the base
	// profile.
	BasedOn string `toml:"based_on"`
	// Env sets variables; EnvUnset removes them.
	Env      map[string]string `toml:"env"`
	EnvUnset []string          `toml:"env_unset"`
	// ArgsSet replaces the value following a flag ("--log" = "b.log"),
	// appending "flag value" when the flag is absent; ArgsAppend appends;
	// ArgsRemove removes a flag and the value after it when that value
	// does not start with "-".
	ArgsSet    map[string]string `toml:"args_set"`
	ArgsAppend []string          `toml:"args_append"`
	ArgsRemove []string          `toml:"args_remove"`
}

var reEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the ladder: named, reasoned, effective variants with
// valid environment names, and a max_attempts within the ladder.
func (g *LaunchGate) Validate(v *Validation) {
	if c := v.CandidateProfile(); c != nil && c.Unmanaged {
		// Start refuses an unmanaged profile: for an exclusive plan,
		// after production was stopped for it.
		v.ConfigErrorf("backends."+c.Name+".unmanaged", "candidate %s is unmanaged: hiro never starts it, so the plan's launch gate (%s) cannot launch it; give the profile a command and port (and remove unmanaged) so hiro can launch it, or qualify it where hiro runs it (nothing was stopped)", c.Name, v.key)
	}
	names := map[string]bool{"base": true}
	for i, vr := range g.Variants {
		vk := fmt.Sprintf("variants[%d]", i)
		if vr == nil {
			continue
		}
		if vr.Name == "" {
			v.Errorf(vk+".name", "missing; name the variant (it names the attempt in the evidence)")
		} else if names[vr.Name] {
			v.Errorf(vk+".name", "%q is used twice (\"base\" is the unmodified profile)", vr.Name)
		}
		if strings.TrimSpace(vr.Reason) == "" {
			v.Errorf(vk+".reason", "missing; every fallback needs a written reason (e.g. \"documented fallback: V1 runner\")")
		}
		if vr.BasedOn != "" && !names[vr.BasedOn] {
			v.Errorf(vk+".based_on", "%q is not an earlier variant", vr.BasedOn)
		}
		if len(vr.Env) == 0 && len(vr.EnvUnset) == 0 && len(vr.ArgsSet) == 0 && len(vr.ArgsAppend) == 0 && len(vr.ArgsRemove) == 0 {
			v.Errorf(vk, "changes nothing; set env, env_unset, args_set, args_append or args_remove")
		}
		for _, name := range sortedKeys(vr.Env) {
			if !reEnvName.MatchString(name) {
				v.Errorf(vk+".env", "%q is not a valid environment variable name; use letters, digits and '_', not starting with a digit", name)
			}
		}
		for j, name := range vr.EnvUnset {
			if !reEnvName.MatchString(name) {
				v.Errorf(fmt.Sprintf("%s.env_unset[%d]", vk, j), "%q is not a valid environment variable name", name)
			}
		}
		for _, flag := range sortedKeys(vr.ArgsSet) {
			if strings.TrimSpace(flag) == "" {
				v.Errorf(vk+".args_set", "an empty flag name; write \"--flag\" = \"value\"")
			}
		}
		names[vr.Name] = true
	}
	if g.MaxAttempts == 0 {
		g.MaxAttempts = len(g.Variants) + 1
	}
	if g.MaxAttempts < 1 || g.MaxAttempts > len(g.Variants)+1 {
		v.Errorf("max_attempts", "%d; at most one attempt per rung: 1 to %d (base + %d variants)", g.MaxAttempts, len(g.Variants)+1, len(g.Variants))
	}
}

// Bound is the plan's timeout, else the sum over the ladder of each
// attempt's ready timeout and stop grace (plus 5 s each).
func (g *LaunchGate) Bound(h *Handle, timeout time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	if h == nil || h.Candidate == nil {
		return DefaultGateTimeout
	}
	var sum time.Duration
	for _, r := range g.Ladder(h.Candidate) {
		sum += r.Profile.ReadyTimeout.Duration + r.Profile.StopGrace.Duration + 5*time.Second
	}
	return sum
}

// registerSecrets tells package redact the variants' environment values
// and the values of secret-looking flags they set.
func (g *LaunchGate) registerSecrets() {
	for _, v := range g.Variants {
		redact.AddEnv(v.Env)
		redact.AddArgs(v.ArgsAppend)
		for flag, val := range v.ArgsSet {
			if redact.SecretFlag(flag) {
				redact.Add(val)
			}
		}
	}
}

// Decisions are the report's reasons for the ladder.
func (g *LaunchGate) Decisions() []string {
	if len(g.Variants) == 0 {
		return nil
	}
	var out []string
	for _, v := range g.Variants {
		out = append(out, fmt.Sprintf("Attempt %s: %s.", v.Name, strings.TrimSuffix(v.Reason, ".")))
	}
	return append(out, fmt.Sprintf("The ladder was bounded to %s; no fallback beyond those declared was tried.", termtext.Plural(g.MaxAttempts, "attempt", "attempts")))
}

// Run walks the ladder until an attempt reaches ready; the ready attempt
// is handed to later gates through h.SetReady.
func (g *LaunchGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	rungs := g.Ladder(h.Candidate)
	// A candidate left running by an earlier, killed hiro would hold the
	// port and be blamed on this attempt: refuse, and say how to stop it.
	if st, err := supervisor.Status(h.StateDir, h.Candidate.Name); err == nil && st.Status == supervisor.StatusRunning {
		return harnessErr("backend %s is already running (pid %d, started %s by an earlier hiro); stop it with 'hiro backend stop %s' and rerun",
			h.Candidate.Name, st.PID, st.StartedAt.Format(time.RFC3339), shellquote.Quote(h.Candidate.Name))
	}
	var last *failure.Failure
	for i := range rungs {
		r := &rungs[i]
		pr := h.shared.predictions[r.Name]
		if pr != nil && !pr.Runs && pr.Rule != "" {
			h.Logf("attempt %d/%d %s: not launched: predicted failure (%s): %s", i+1, len(rungs), r.Name, pr.Class, pr.Reason)
			a := predictedFailure(r, pr)
			last = a.Failure
			eg.Attempts = append(eg.Attempts, a)
			_ = h.Save()
			continue
		}
		if stop := h.shared.stopProduction; stop != nil {
			h.shared.stopProduction = nil
			if err := stop(ctx); err != nil {
				return harnessErr("%v", err)
			}
		}
		h.Logf("attempt %d/%d %s: %s", i+1, len(rungs), r.Name, r.Reason)
		t0 := time.Now()
		// Recorded from the start (the supervisor writes the record): if
		// hiro is killed, 'hiro backend status/stop' and the lease
		// recovery can reach the attempt.
		opts := supervisor.Options{Attempt: r.Name, Owner: "campaign " + filepath.Base(h.Dir), Progress: func(p supervisor.Progress) {
			h.Statusf("attempt %d/%d %s: %s, phase %s, %s / %s", i+1, len(rungs), r.Name, p.Step, p.Phase,
				p.Elapsed.Round(time.Second), r.Profile.ReadyTimeout.Duration)
		}}
		proc, res := production.Keeper{StateDir: h.StateDir}.Start(ctx, r.Profile, opts)
		h.Waited(t0)
		a := evidence.Attempt{Name: r.Name, Reason: r.Reason, Changes: r.Changes, LogPath: res.LogPath, Prediction: pr,
			Facts: res.Facts, Device: res.Device, DurationMS: time.Since(t0).Milliseconds()}
		a.Effective = &evidence.Effective{ProfileHash: r.Profile.Hash(), Env: r.Profile.Env, Args: r.Profile.Args}
		if res.Stop != nil {
			a.Stop = &evidence.Stop{Graceful: res.Stop.Graceful, Killed: res.Stop.Killed, Leak: res.Stop.Leak}
		}
		switch res.State {
		case supervisor.StateReady:
			a.ReachedReady, a.ReadyAfterMS = true, res.ReadyAfterMS
			eg.Attempts = append(eg.Attempts, a)
			h.SetReady(&Ready{Profile: r.Profile, Proc: proc})
			model := r.Profile.Model
			if len(res.ModelIDs) > 0 {
				model = production.PickModel(r.Profile, res.ModelIDs)
			}
			h.Logf("attempt %s reached ready in %s (model %s, reply %q)", r.Name,
				time.Duration(res.ReadyAfterMS)*time.Millisecond, model, res.ProbeReply)
			return nil
		case supervisor.StateFailed:
			a.Failure = res.Failure
			if a.Facts == nil && res.Failure != nil {
				a.Facts = res.Failure.Facts
			}
			last = res.Failure
			eg.Attempts = append(eg.Attempts, a)
			h.Logf("attempt %s failed: %s", r.Name, res.Failure.Error())
			if res.Failure != nil && res.Failure.Class == failure.ClassInvalidConfiguration {
				// The engine refused the profile itself: a later rung is
				// the same mistake or hides it; no verdict on the candidate.
				eg.Failure = res.Failure
				_ = h.Save()
				return configurationErr(r, res.Failure)
			}
			if engine.ModelAbsent(res.Failure) {
				// The engine's store has no model of the profile's name
				// (a typo, a model never created there): the profile is
				// wrong, as above, not the candidate (issue 26, T16).
				eg.Failure = res.Failure
				_ = h.Save()
				return modelAbsentErr(r, res.Failure)
			}
		case supervisor.StateAborted:
			eg.Attempts = append(eg.Attempts, a)
			return fmt.Errorf("attempt %s aborted: %s", r.Name, res.Error)
		default:
			eg.Attempts = append(eg.Attempts, a)
			return harnessErr("attempt %s could not be made: %s", r.Name, res.Error)
		}
		_ = h.Save()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if last != nil {
		eg.Failure = last
	}
	return fmt.Errorf("no attempt reached ready (%d of %d declared attempts made)", len(eg.Attempts), len(g.Variants)+1)
}

// configurationErr is the campaign's abort for attempt r refused by its
// engine as configured (f of class invalid_configuration): the line, the
// profile and the plan key to fix, and the next step.
func configurationErr(r *Rung, f *failure.Failure) error {
	where := "profile " + r.Profile.Name + " (backends." + r.Profile.Name + ")"
	if r.Name != "base" {
		where += " as variant " + r.Name + " changes it"
	}
	return fmt.Errorf("%w: attempt %s: the engine refused its configuration (%s): %s; the %s is wrong, not the candidate, so no verdict: fix it and rerun ('hiro qualify PLAN --check' checks it first). %s",
		ErrConfiguration, r.Name, f.Rule, f.RootCause, where, f.NextStep)
}

// modelAbsentErr is the campaign's abort for attempt r whose engine has
// no model of the profile's name in its store (engine.ModelAbsent): the
// key to fix, the did-you-mean when there is one, and the next step. A
// served model of another identity stays a verdict (not this error).
func modelAbsentErr(r *Rung, f *failure.Failure) error {
	key := "backends." + r.Profile.Name + ".model"
	fix := fmt.Sprintf("set %s to a model that store has, or create %q in it, and rerun. %s", key, r.Profile.Model, f.NextStep)
	if near, _ := f.Detail["did_you_mean"].(string); near != "" {
		fix = fmt.Sprintf("set %s to %q, the did-you-mean, and rerun (or create %q in that store)", key, near, r.Profile.Model)
	}
	return fmt.Errorf("%w: attempt %s: %s; %s names a model the engine's store does not have, so the profile is wrong, "+
		"not the candidate, and there is no verdict: %s",
		ErrConfiguration, r.Name, f.RootCause, key, fix)
}

// Rung is one attempt of the launch ladder: a name, its reason, the
// derived profile and a description of what changed.
type Rung struct {
	Name    string
	Reason  string
	Profile *config.Profile
	Changes []string
}

// Ladder derives the attempt profiles from base: "base" first, then each
// variant, at most g.MaxAttempts rungs.
func (g *LaunchGate) Ladder(base *config.Profile) []Rung {
	rungs := []Rung{{Name: "base", Reason: "the profile as configured", Profile: base.Clone()}}
	byName := map[string]Rung{"base": rungs[0]}
	for _, v := range g.Variants {
		from := rungs[0]
		if v.BasedOn != "" {
			from = byName[v.BasedOn]
		}
		p := from.Profile.Clone()
		var changes []string
		if v.BasedOn != "" && v.BasedOn != "base" {
			changes = append(changes, "based on "+v.BasedOn)
		}
		keys := sortedKeys(v.Env)
		for _, name := range keys {
			p.Env[name] = v.Env[name]
			changes = append(changes, "env "+name+"="+v.Env[name])
		}
		for _, name := range v.EnvUnset {
			delete(p.Env, name)
			changes = append(changes, "env unset "+name)
		}
		for _, flag := range v.ArgsRemove {
			p.Args = removeFlag(p.Args, flag)
			changes = append(changes, "args remove "+flag)
		}
		for _, flag := range sortedKeys(v.ArgsSet) {
			p.Args = setFlag(p.Args, flag, v.ArgsSet[flag])
			changes = append(changes, "args set "+flag+" "+v.ArgsSet[flag])
		}
		if len(v.ArgsAppend) > 0 {
			p.Args = append(p.Args, v.ArgsAppend...)
			changes = append(changes, "args append "+strings.Join(v.ArgsAppend, " "))
		}
		r := Rung{Name: v.Name, Reason: v.Reason, Profile: p, Changes: changes}
		rungs = append(rungs, r)
		byName[v.Name] = r
	}
	if g.MaxAttempts > 0 && len(rungs) > g.MaxAttempts {
		rungs = rungs[:g.MaxAttempts]
	}
	return rungs
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// setFlag sets the value after flag, or appends "flag value"; a flag
// written "--flag=value" is replaced in that form.
func setFlag(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == flag && i+1 < len(out) {
			out[i+1] = value
			return out
		}
		if strings.HasPrefix(a, flag+"=") {
			out[i] = flag + "=" + value
			return out
		}
	}
	return append(out, flag, value)
}

// removeFlag removes flag (and its value, when the next argument is not a
// flag) or "--flag=value".
func removeFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == flag {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		if strings.HasPrefix(a, flag+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}
