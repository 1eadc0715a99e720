package production

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/signing"
)

// RecordSchema names the format of an activation record.
const RecordSchema = "hiro.activation/v1"

// Kinds of record.
const (
	KindActivate = "activate"
	KindRollback = "rollback"
)

// Outcomes of a switch.
const (
	// OutcomeSwitched: the new production is serving and verified; the
	// record names the active production.
	OutcomeSwitched = "switched"
	// OutcomeFailed: the switch failed and the old production was put
	// back and verified (or was never stopped).
	OutcomeFailed = "failed"
	// OutcomeRecovered: a switch cut short (its hiro was killed) was
	// settled by a later hiro: the production of the latest switched record
	// serves, verified.
	OutcomeRecovered = "recovered"
	// OutcomeCritical: the switch failed and the old production could not
	// be put back.
	OutcomeCritical = "critical"
)

// SourceConfiguration is Snapshot.Source for the production the
// configuration's [production] names.
const SourceConfiguration = "configuration"

// Dir returns the user's private production state folder
// (private.Production): $HIRO_PRODUCTION_DIR, else <state home>/production
// (private.StateHome: $HIRO_STATE_HOME, $HIRO_LEASE_DIR for tests and
// trials, $XDG_STATE_HOME/hiro, ~/.local/state/hiro, the password
// database's home when HOME is unset). It holds one folder per
// configuration file. Without a home it is an error naming the variable
// to set: there is no shared fallback. It creates nothing.
func Dir() (string, error) { return private.Production.Path() }

// configDir is the folder of one configuration file's records, the state
// folder and it checked (package private: owned by this user, written by
// no one else); create makes both (0700) when missing. Without create, a
// missing folder is an error wrapping fs.ErrNotExist.
func configDir(cfgPath string, create bool) (string, error) {
	check := private.Production.Check
	if create {
		check = private.Production.Ensure
	}
	base, err := check()
	if err != nil {
		return "", err
	}
	key := strings.NewReplacer("/", "_", ".", "_").Replace(strings.TrimPrefix(cfgPath, "/"))
	dir := filepath.Join(base, key)
	if create {
		return dir, private.EnsureDir(dir, private.Production.What)
	}
	return dir, private.CheckDir(dir, private.Production.What)
}

// ConfigHash returns the SHA-256 (hex) of a production's whole
// configuration: the profile's canonical form (config.Profile.Hash) and the
// content of each of its config files (a missing file hashes as
// "missing"), and the per-file digests. "Restored exactly" compares it.
func ConfigHash(p *config.Profile) (string, map[string]string) {
	h := sha256.New()
	h.Write([]byte(p.Hash()))
	files := map[string]string{}
	for _, f := range p.ConfigFiles {
		b, err := os.ReadFile(f)
		d := "missing"
		if err == nil {
			s := sha256.Sum256(b)
			d = hex.EncodeToString(s[:])
		}
		files[f] = d
		h.Write([]byte("\x00" + f + "\x00" + d))
	}
	return hex.EncodeToString(h.Sum(nil)), files
}

// Snapshot is one production as it was recorded: the profile name, its
// effective profile (the launch variant's environment and arguments
// applied), the hash of that configuration and where it came from.
type Snapshot struct {
	// Name is the profile name in the configuration.
	Name string `json:"name"`
	// Variant is the launch attempt that qualified ("base" or a variant's
	// name); empty for the configuration's own production.
	Variant string `json:"variant,omitempty"`
	// Profile is the effective profile that runs.
	Profile *config.Profile `json:"profile"`
	// ConfigHash is ConfigHash(Profile) when recorded; ConfigFiles the
	// per-file digests it covers.
	ConfigHash  string            `json:"config_hash"`
	ConfigFiles map[string]string `json:"config_files,omitempty"`
	// Source is SourceConfiguration, or "activation N" / "rollback N" for
	// the record that made it production.
	Source string `json:"source"`
}

// Snap records p as it is now.
func Snap(p *config.Profile, variant, source string) *Snapshot {
	h, files := ConfigHash(p)
	return &Snapshot{Name: p.Name, Variant: variant, Profile: p.Clone(), ConfigHash: h, ConfigFiles: files, Source: source}
}

// Step is one step of a switch, for the record.
type Step struct {
	// Name says what was done ("start candidate", "stop old production").
	Name string `json:"name"`
	// OK says whether it succeeded; Detail what was found or why not.
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	// At is when it ended; DurationMS how long it took.
	At         time.Time `json:"at"`
	DurationMS int64     `json:"duration_ms"`
}

// Record is one activation or rollback: the history entry, and the
// evidence of what the switch did. Records are written atomically, 0600,
// to <Dir>/<config key>/<seq>-<kind>.json.
type Record struct {
	Schema string `json:"schema"`
	// Seq numbers the records of one configuration from 1.
	Seq int `json:"seq"`
	// Kind is KindActivate or KindRollback; Outcome one of the Outcome
	// constants.
	Kind    string `json:"kind"`
	Outcome string `json:"outcome"`
	// Config is the configuration file's absolute path.
	Config string `json:"config"`
	// StartedAt and FinishedAt time the switch.
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// From is the production before the switch; To the one switched to.
	From *Snapshot `json:"from"`
	To   *Snapshot `json:"to"`
	// RollbackTo is where 'hiro rollback' goes once this record is the
	// active one, and RollbackSeq the record that made it production (0:
	// the configuration). Nil when there is nothing to go back to.
	RollbackTo  *Snapshot `json:"rollback_to,omitempty"`
	RollbackSeq int       `json:"rollback_seq"`
	// Campaign is the evidence id the activation rests on; Evidence the
	// private evidence file's path. A rollback names the record it undid.
	Campaign string `json:"campaign,omitempty"`
	Evidence string `json:"evidence,omitempty"`
	Undid    int    `json:"undid,omitempty"`
	// Accepted lists, one sentence each, what the evidence lacked that the
	// user accepted deliberately (hiro activate --accept-inconclusive).
	Accepted []string `json:"accepted,omitempty"`
	// Trust says whose signature the switch acted on: the evidence's for
	// an activation, the undone record's for a rollback ("signed by
	// SHA256:... (name)", or "unsigned, accepted with --trust-unsigned").
	Trust string `json:"trust,omitempty"`
	// Router says whether a running router was switched.
	Router bool `json:"router"`
	// Steps are the switch's steps in order.
	Steps []Step `json:"steps"`
	// Verified is the new production's readiness proof (health, identity,
	// READY completion); Restored the old one's when it was put back.
	Verified *evidence.Restored `json:"verified,omitempty"`
	Restored *evidence.Restored `json:"restored,omitempty"`
	// Ramp is a progressive activation's account (evidence v3): the
	// shares the router moved to the new production step by step, each
	// step's live comparison, and how it ended (completed, or reversed
	// by the router with its reason); nil for a switch at once.
	Ramp *evidence.RampResult `json:"ramp,omitempty"`
	// Error says why the switch failed.
	Error string `json:"error,omitempty"`
	// Signature is hiro's signature of the record (package signing), over
	// the canonical record without it; every write is signed, in the one
	// file written atomically. 'hiro rollback' acts only on a record whose
	// signature verifies with a trusted key.
	Signature *signing.Signature `json:"signature,omitempty"`
	// Path is the record's file (not stored).
	Path string `json:"-"`
}

// Active is the production every command acts on.
type Active struct {
	Snapshot
	// Seq is the record that made it production; 0 when the
	// configuration's [production] names it.
	Seq int
	// Record is that record; nil for the configuration's production.
	Record *Record
}

// Resolve returns the active production of cfg: the latest switched
// record of cfg's file, else the profile [production] names (its hash
// computed now). It returns nil and no error when neither names one.
// Errors: an unreadable record folder or record (the message names it).
func Resolve(cfg *config.Config) (*Active, error) {
	recs, err := History(cfg.Path)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Outcome == OutcomeSwitched && r.To != nil && r.To.Profile != nil {
			to := *r.To
			to.Profile = r.To.Profile.Clone()
			to.Profile.Name = to.Name
			return &Active{Snapshot: to, Seq: r.Seq, Record: r}, nil
		}
	}
	p := cfg.ProductionProfile()
	if p == nil {
		return nil, nil
	}
	return &Active{Snapshot: *Snap(p, "", SourceConfiguration)}, nil
}

// ProfileFor returns the profile to run for name: the active
// production's effective profile when name is the active production,
// else the configuration's profile. Errors: no such profile, or an
// unreadable record.
func ProfileFor(cfg *config.Config, name string) (*config.Profile, error) {
	a, err := Resolve(cfg)
	if err != nil {
		return nil, err
	}
	if a != nil && a.Name == name {
		if _, err := cfg.Backend(name); err != nil {
			return nil, fmt.Errorf("the active production %s (%s) is no longer a profile of %s: %w; put the profile back or roll back with 'hiro rollback'", name, a.Source, cfg.Path, err)
		}
		return a.Profile.Clone(), nil
	}
	return cfg.Backend(name)
}

// Name returns the active production's profile name, "" when none.
func Name(cfg *config.Config) string {
	if a, err := Resolve(cfg); err == nil && a != nil {
		return a.Name
	}
	return cfg.Production.Backend
}

// Rebuild applies the snapshot's variant (environment and arguments) to
// the configuration's profile of the same name as it is now: what would
// run if the snapshot were started today.
func (s *Snapshot) Rebuild(cfg *config.Config) (*config.Profile, error) {
	base, err := cfg.Backend(s.Name)
	if err != nil {
		return nil, err
	}
	p := base.Clone()
	if s.Profile != nil {
		p.Env = map[string]string{}
		for k, v := range s.Profile.Env {
			p.Env[k] = v
		}
		p.Args = append([]string(nil), s.Profile.Args...)
	}
	return p, nil
}

// MismatchError says that a recorded configuration no longer matches what
// would run; Field names what differs.
type MismatchError struct {
	// Field is the dotted path of what differs ("backends.prod.args",
	// "config_files[/etc/launcher.sh]").
	Field string
	// Recorded and Now are the two values (hashes or short values).
	Recorded, Now string
	// What says which production ("previous production prod (activation 2)").
	What string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: %s changed since it was recorded (recorded %s, now %s)", e.What, e.Field, short(e.Recorded), short(e.Now))
}

func short(s string) string {
	if len(s) == 64 {
		return s[:12]
	}
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// Check verifies that the snapshot's configuration still matches what
// would run now (Rebuild, hashed with ConfigHash). A difference is a
// *MismatchError naming the first differing profile key or config file.
func (s *Snapshot) Check(cfg *config.Config, what string) (*config.Profile, error) {
	p, err := s.Rebuild(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	h, files := ConfigHash(p)
	if h == s.ConfigHash {
		return p, nil
	}
	if s.Profile != nil {
		if k, a, b := diffProfiles(s.Profile, p); k != "" {
			return nil, &MismatchError{Field: "backends." + s.Name + "." + k, Recorded: a, Now: b, What: what}
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if files[f] != s.ConfigFiles[f] {
			return nil, &MismatchError{Field: "config_files[" + f + "]", Recorded: s.ConfigFiles[f], Now: files[f], What: what}
		}
	}
	return nil, &MismatchError{Field: "config_hash", Recorded: s.ConfigHash, Now: h, What: what}
}

// diffProfiles returns the first top-level JSON key whose value differs
// between a and b, with both values.
func diffProfiles(a, b *config.Profile) (key, av, bv string) {
	var ma, mb map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if !bytes.Equal(ma[k], mb[k]) {
			return k, string(ma[k]), string(mb[k])
		}
	}
	return "", "", ""
}

// History returns the records of the configuration file cfgPath, oldest
// first (by Seq). A record that is not valid JSON is an error naming it.
func History(cfgPath string) ([]*Record, error) {
	dir, err := configDir(cfgPath, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading production records: %w", err)
	}
	return historyIn(dir)
}

// historyIn is History of the records folder dir.
func historyIn(dir string) ([]*Record, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading production records: %w", err)
	}
	var out []*Record
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") || n == intentFile {
			continue
		}
		path := filepath.Join(dir, n)
		b, err := readPrivate(path)
		if err != nil {
			return nil, fmt.Errorf("reading production record: %w", err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil || r.Schema != RecordSchema {
			return nil, fmt.Errorf("production record %s is not a %s document (%v); move it away to go on", path, RecordSchema, err)
		}
		r.Path = path
		out = append(out, &r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// Append gives r the next sequence number of its configuration and writes
// it atomically (0600 in a 0700 folder). Call it while holding the Lock.
func Append(r *Record) error {
	recs, err := History(r.Config)
	if err != nil {
		return err
	}
	r.Seq = 1
	if n := len(recs); n > 0 {
		r.Seq = recs[n-1].Seq + 1
	}
	r.Schema = RecordSchema
	if r.To != nil && r.To.Source == "" {
		noun := map[string]string{KindActivate: "activation", KindRollback: "rollback"}[r.Kind]
		if noun == "" {
			noun = r.Kind
		}
		r.To.Source = fmt.Sprintf("%s %d", noun, r.Seq)
	}
	dir, err := configDir(r.Config, true)
	if err != nil {
		return err
	}
	r.Path = filepath.Join(dir, fmt.Sprintf("%06d-%s.json", r.Seq, r.Kind))
	return writeRecord(r)
}

// Rewrite writes an appended record again (to r.Path), atomically.
func Rewrite(r *Record) error {
	if r.Path == "" {
		return fmt.Errorf("production record %d was never appended", r.Seq)
	}
	return writeRecord(r)
}

// readPrivate reads a record or intent that passes private.Check (owned by
// this user, written by no one else): one planted by another user is
// refused, never acted on.
func readPrivate(path string) ([]byte, error) { return private.ReadFile(path, nil) }

func writePrivateJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

// writeRecord writes r signed with the user's key (signing.LoadOrCreate:
// the same key that signs evidence), the signature embedded in the one
// file written atomically.
func writeRecord(r *Record) error {
	k, err := signing.LoadOrCreate()
	if err != nil {
		return fmt.Errorf("production record %s not written: %w", r.Path, err)
	}
	r.Signature = nil
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if r.Signature, err = k.Sign(b); err != nil {
		return err
	}
	return writePrivateJSON(r.Path, r)
}

// ReadRecordFile returns the bytes of the record at path, refused (an
// error) when another user owns it or others may write it.
func ReadRecordFile(path string) ([]byte, error) { return readPrivate(path) }
