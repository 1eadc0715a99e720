package activation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/signing"
)

// RefusedError says why a switch was refused before anything was started
// or stopped. Field is the exact evidence or configuration field that
// decided it ("verdict", "fingerprints.candidate_profile",
// "production.config_hash_before", "backends.prod.args").
type RefusedError struct {
	Field string
	Msg   string
	// Err is the cause when the refusal has one (a *lease.HeldError:
	// another hiro holds a lease the switch needs).
	Err error
}

// Unwrap returns the cause (nil for most refusals).
func (e *RefusedError) Unwrap() error { return e.Err }

func (e *RefusedError) Error() string {
	if e.Field == "" {
		return "refused: " + e.Msg
	}
	return "refused: " + e.Field + ": " + e.Msg
}

func refuse(field, format string, a ...any) error {
	return &RefusedError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Qualified is a campaign's evidence that passed every check: what would
// run if it were activated now.
type Qualified struct {
	// Evidence is the private evidence; Path its file.
	Evidence *evidence.Evidence
	Path     string
	// Plan is the campaign's plan as it is now (its digest matched).
	Plan *qualify.Plan
	// Profile is the effective profile that qualified: the candidate
	// with the launch attempt's environment and arguments; Variant that
	// attempt's name.
	Profile *config.Profile
	Variant string
	// Artifact is the manifest verified again (nil: the plan pins none).
	Artifact *artifact.Report
	// Active is the production it would replace.
	Active *production.Active
	// Accepted says, one sentence each, what the evidence lacked that the
	// user accepted (Accept): the activation record keeps it.
	Accepted []string
	// Trust says whose signature it carries (Accept.Verify).
	Trust string
}

// Accept are the shortfalls a user may accept deliberately (flags of
// 'hiro activate'); each one accepted is recorded in the activation
// record.
type Accept struct {
	// Inconclusive accepts a campaign whose verdict is inconclusive: no
	// gate failed, but a comparison with production could not decide
	// (--accept-inconclusive).
	Inconclusive bool
	// OlderEvidence accepts a semantic gate of an older evidence schema
	// (v1, v2: no intervals) as satisfying the activation policy
	// (--accept-older-evidence); the record says so.
	OlderEvidence bool
	// Unsigned accepts evidence (or, for a rollback, an activation
	// record) without a signature, written by a hiro older than signing
	// (--trust-unsigned); the record's trust field says so. A changed or
	// foreign-key signature is refused whatever this says.
	Unsigned bool
	// Trust is the list of trusted keys; nil loads the user's
	// (signing.LoadTrust).
	Trust *signing.Trust
}

// EvidencePath returns the private evidence file for arg: a campaign's
// evidence folder, its evidence.private.json, or its public evidence.json
// (whose private sibling is used: the effective profile is private).
// The folder is resolved by evidence.File, as evidence verify and journal
// add resolve theirs.
func EvidencePath(arg string) (string, error) {
	p, err := evidence.File(arg, evidence.PrivateFile, evidence.PublicFile)
	if errors.Is(err, evidence.ErrNoEvidenceFile) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("evidence %s: %w", arg, err)
	}
	if filepath.Base(p) == evidence.PublicFile {
		p = filepath.Join(filepath.Dir(p), evidence.PrivateFile)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("evidence %s: the private evidence %s is needed (it records what ran): %w", arg, p, err)
	}
	return filepath.Abs(p)
}

// Check decides whether the evidence at path may activate its candidate
// now, touching nothing. Refusals are *RefusedError naming the field:
// verdict not qualified, or contradicted by the evidence itself
// (exit_code, gates[ID].status, gates[ID].failure,
// production.restored.ok: see consistent); finished_at older than cfg's max_evidence_age;
// the candidate already production or no longer a profile; the plan, the
// candidate profile, the prompts, the schema, the corpus or the artifact
// manifest changed (each its fingerprints.* field), or the artifact no
// longer verifies; production.* when the production it was compared
// against is no longer the active one (stale); the launch attempt's
// effective profile when it no longer hashes as recorded. Before any of
// them: the file must be this user's, written by no one else ("file"), and
// signed by a key acc trusts ("signature": unsigned, changed after it was
// signed, or a foreign key), except that a signature refusal of evidence
// whose verdict cannot activate is reported as the verdict's refusal,
// naming the signature too (verdictFirst). Other errors (unreadable evidence) are
// returned as they are.
func Check(ctx context.Context, cfg *config.Config, path string, now time.Time, acc Accept) (*Qualified, error) {
	if b, err := os.ReadFile(path); err == nil && !json.Valid(b) {
		return nil, fmt.Errorf("%s is not an evidence document (it is not JSON): give a campaign's evidence folder or the evidence.json in it", path)
	}
	trust, err := acc.Verify(path, "evidence")
	if err != nil {
		return nil, verdictFirst(path, acc, err)
	}
	ev, err := evidence.Load(path)
	if err != nil {
		return nil, err
	}
	q := &Qualified{Evidence: ev, Path: path, Trust: trust}
	accepted, err := verdict(ev, acc)
	if err != nil {
		return nil, err
	}
	q.Accepted = append(q.Accepted, accepted...)
	if err := consistent(ev); err != nil {
		return nil, err
	}
	if err := q.policy(cfg, acc); err != nil {
		return nil, err
	}
	if ev.FinishedAt == nil {
		return nil, refuse("finished_at", "campaign %s has no finish time: it never finished", ev.ID)
	}
	maxAge := cfg.Production.MaxEvidenceAge.Duration
	if age := now.Sub(*ev.FinishedAt); age > maxAge {
		return nil, refuse("finished_at", "campaign %s finished %s ago, more than production.max_evidence_age %s allows; run the campaign again", ev.ID, age.Round(time.Minute), maxAge)
	}
	if q.Active, err = production.Resolve(cfg); err != nil {
		return nil, err
	}
	if q.Active != nil && q.Active.Name == ev.Candidate {
		return nil, refuse("candidate", "%s is already the active production (%s)", ev.Candidate, q.Active.Source)
	}
	cand, err := cfg.Backend(ev.Candidate)
	if err != nil {
		return nil, refuse("candidate", "%v", err)
	}
	fp := ev.Fingerprints
	if h := cand.Hash(); h != fp.CandidateProfile {
		return nil, mismatch("fingerprints.candidate_profile", "the candidate profile "+cand.Name+" in "+cfg.Path, fp.CandidateProfile, h)
	}
	if ev.Plan == "" {
		return nil, refuse("plan", "the evidence names no plan file; pass the private evidence (%s)", evidence.PrivateFile)
	}
	plan, _, err := qualify.LoadPlan(ev.Plan, cfg.Path)
	if err != nil {
		return nil, refuse("plan", "the campaign's plan %s no longer loads: %v", ev.Plan, err)
	}
	q.Plan = plan
	now2 := qualify.Fingerprints(plan, cand)
	for _, f := range []struct{ field, what, was, is string }{
		{"fingerprints.plan", "the plan " + plan.Path, fp.Plan, now2.Plan},
		{"fingerprints.prompts", "the extraction prompts", fp.Prompts, now2.Prompts},
		{"fingerprints.schemas", "the structured-output schema", fp.Schemas, now2.Schemas},
		{"fingerprints.corpus", "the semantic corpus", fp.Corpus, now2.Corpus},
	} {
		if f.was != f.is {
			return nil, mismatch(f.field, f.what, f.was, f.is)
		}
	}
	if err := checkEnvironment(ctx, fp.Environment, cand); err != nil {
		return nil, err
	}
	if err := q.checkArtifact(ctx, cand); err != nil {
		return nil, err
	}
	if err := q.checkProduction(); err != nil {
		return nil, err
	}
	if err := q.effective(cand); err != nil {
		return nil, err
	}
	return q, nil
}

// verdict refuses evidence whose verdict cannot activate (aborted,
// not_qualified; inconclusive unless acc.Inconclusive). It returns the
// shortfall the user accepted, if any, for the activation record.
func verdict(ev *evidence.Evidence, acc Accept) ([]string, error) {
	switch {
	case ev.Verdict == evidence.VerdictInconclusive && acc.Inconclusive:
		return []string{fmt.Sprintf("accepted inconclusive evidence (--accept-inconclusive): %s", ev.TerminationReason)}, nil
	case ev.Verdict == evidence.VerdictInconclusive:
		return nil, refuse("verdict", "campaign %s is inconclusive (%s): the corpus could not tell the candidate from production within the margin, so the evidence shows neither that it holds production's level nor that it does not; qualify again on a larger corpus (the report says about how many documents), or pass --accept-inconclusive to activate on this evidence anyway (the activation record says so)", ev.ID, ev.TerminationReason)
	case ev.Verdict != evidence.VerdictQualified:
		return nil, refuse("verdict", "campaign %s is %q, not %q (%s); only a qualified campaign may change production", ev.ID, ev.Verdict, evidence.VerdictQualified, ev.TerminationReason)
	}
	return nil, nil
}

// verdictFirst turns a signature refusal (sigErr) into the verdict's
// refusal when the evidence, read unverified, records a verdict that
// cannot activate: no key changes that, so the user is not sent to widen
// trust for evidence that would be refused anyway. Both refusals are
// named. Refusing on unverified content widens nothing; any other error
// (the file's owner or mode, an unreadable file) is returned as it is.
func verdictFirst(path string, acc Accept, sigErr error) error {
	var r *RefusedError
	if !errors.As(sigErr, &r) || r.Field != signing.Field {
		return sigErr
	}
	ev, err := evidence.Load(path)
	if err != nil {
		return sigErr
	}
	_, verr := verdict(ev, acc)
	var vr *RefusedError
	if !errors.As(verr, &vr) {
		return sigErr
	}
	return &RefusedError{Field: vr.Field, Msg: vr.Msg + "; also, " + r.Field + ": " + r.Msg + " (trusting the key would not change the verdict)"}
}

// consistent refuses evidence whose own facts contradict each other (a
// hand-edited file: evidence.Consistent, the check every command that
// publishes or acts on evidence shares), and evidence of a campaign that
// stopped production and did not restore it.
func consistent(ev *evidence.Evidence) error {
	var ie *evidence.InconsistentError
	if err := ev.Consistent(); errors.As(err, &ie) {
		return refuse(ie.Field, "campaign %s: %s", ev.ID, ie.Msg)
	} else if err != nil {
		return err
	}
	if p := ev.Production; p.Stopped && (p.Restored == nil || !p.Restored.OK) {
		return refuse("production.restored.ok", "campaign %s stopped production and did not restore it; run the campaign again", ev.ID)
	}
	return nil
}

// checkEnvironment refuses evidence whose environment (engine build,
// GPU model, driver, CUDA) differs from what the candidate would run on
// now, naming the field; evidence that recorded none (older) is not
// compared.
func checkEnvironment(ctx context.Context, was *evidence.Environment, cand *config.Profile) error {
	if was == nil {
		return nil
	}
	is := qualify.EnvironmentOf(ctx, cand)
	for _, f := range []struct{ field, what, was, is string }{
		{"fingerprints.environment.engine_build", "the engine executable of " + cand.Name + " (" + cand.Command + ")", was.EngineBuild, is.EngineBuild},
		{"fingerprints.environment.gpu_model", "the GPU model", was.GPUModel, is.GPUModel},
		{"fingerprints.environment.driver", "the GPU driver", was.Driver, is.Driver},
		{"fingerprints.environment.cuda_runtime", "the CUDA version", was.CUDARuntime, is.CUDARuntime},
	} {
		if f.was != f.is {
			return refuse(f.field, "%s changed since the campaign (recorded %q, now %q): the evidence is of another environment; run the campaign again here", f.what, short(strings.TrimPrefix(f.was, "sha256:")), short(strings.TrimPrefix(f.is, "sha256:")))
		}
	}
	return nil
}

func mismatch(field, what, recorded, now string) error {
	if now == "" {
		now = "(unreadable)"
	}
	if recorded == "" {
		recorded = "(none)"
	}
	return refuse(field, "%s changed since the campaign (recorded %s, now %s); run the campaign again on what would run", what, short(recorded), short(now))
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// checkArtifact verifies the plan's artifact (or the candidate's) again
// and compares it with the evidence's fingerprint.
func (q *Qualified) checkArtifact(ctx context.Context, cand *config.Profile) error {
	manifest, dir := cand.Artifact, cand.ArtifactDir
	for _, g := range q.Plan.Gates {
		if ag, ok := g.Gate.(*qualify.ArtifactGate); ok && ag.Manifest != "" && !g.Skip {
			manifest, dir = ag.Manifest, ag.Dir
		}
	}
	recorded := q.Evidence.Fingerprints.ArtifactManifest
	if manifest == "" {
		if recorded != "" {
			return refuse("fingerprints.artifact_manifest", "the campaign verified an artifact, but neither the plan nor the candidate profile names one now")
		}
		return nil
	}
	rep, err := artifact.Verify(ctx, manifest, dir, artifact.VerifyOptions{})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return refuse("fingerprints.artifact_manifest", "the artifact %s cannot be verified again: %v", manifest, err)
	}
	q.Artifact = rep
	fileDigest := qualify.Fingerprints(q.Plan, nil).ArtifactManifest
	if recorded != rep.Digest && recorded != fileDigest {
		return mismatch("fingerprints.artifact_manifest", "the artifact manifest "+manifest, recorded, rep.Digest)
	}
	if !rep.OK {
		return refuse("fingerprints.artifact_manifest", "the artifact no longer matches its manifest: %s", rep.Summary())
	}
	return nil
}

// checkProduction refuses stale evidence: the production the candidate
// was compared against must be the active one, with the same
// configuration.
func (q *Qualified) checkProduction() error {
	ev, a := q.Evidence, q.Active
	if a == nil {
		if ev.ProductionBackend != "" {
			return refuse("production_backend", "stale: the campaign compared against production %s, but no production is configured now", ev.ProductionBackend)
		}
		return nil
	}
	if ev.ProductionBackend != a.Name {
		return refuse("production_backend", "stale: the campaign compared against production %q, but the active production is %s (%s); run the campaign again", ev.ProductionBackend, a.Name, a.Source)
	}
	if ev.Production.ConfigHashBefore != a.ConfigHash {
		return mismatch("production.config_hash_before", "stale: the active production "+a.Name+" ("+a.Source+")", ev.Production.ConfigHashBefore, a.ConfigHash)
	}
	return nil
}

// effective finds the launch attempt that reached ready and rebuilds what
// it ran from the candidate profile and the attempt's recorded
// environment and arguments; the result must hash as recorded.
func (q *Qualified) effective(cand *config.Profile) error {
	for _, g := range q.Evidence.Gates {
		if g.Kind != qualify.KindLaunch {
			continue
		}
		for _, a := range g.Attempts {
			if !a.ReachedReady {
				continue
			}
			field := fmt.Sprintf("gates[%s].attempts[%s].effective", g.ID, a.Name)
			p := cand.Clone()
			if a.Effective == nil {
				if a.Name != "base" {
					return refuse(field, "the evidence does not record what variant %s ran; run the campaign again with this hiro", a.Name)
				}
			} else {
				p.Env = map[string]string{}
				for k, v := range a.Effective.Env {
					p.Env[k] = v
				}
				p.Args = append([]string(nil), a.Effective.Args...)
				if h := p.Hash(); h != a.Effective.ProfileHash {
					return mismatch(field+".profile_hash", "the effective profile of attempt "+a.Name, a.Effective.ProfileHash, h)
				}
			}
			q.Profile, q.Variant = p, a.Name
			return nil
		}
		return refuse("gates["+g.ID+"].attempts", "no launch attempt reached ready")
	}
	return refuse("gates", "the campaign has no launch gate: nothing proves the candidate starts")
}
