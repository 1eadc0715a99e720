package evidence

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/signing"
)

// File names inside a campaign's evidence directory.
const (
	PrivateFile = "evidence.private.json"
	PublicFile  = "evidence.json"
	ReportFile  = "report.md"
)

// WriteBoth atomically writes the private document and its public copy
// into dir (PrivateFile, PublicFile), each signed with k (Encode).
func WriteBoth(dir string, e *Evidence, k *signing.Key) error {
	priv, pub, err := Encode(e, k)
	if err != nil {
		return err
	}
	return WriteEncoded(dir, priv, pub)
}

// Encode returns the indented JSON of the private document and of its
// public copy: a snapshot that later changes to e do not affect. With a
// key, each carries its own embedded signature (Signature, over the
// canonical bytes of that document without it): the signature is part of
// the one file written atomically, so every rewrite after a gate is
// signed as a whole and no reader ever sees a document and a signature
// that do not belong together. A nil key writes unsigned documents
// (tests of the format only: package qualify always signs).
func Encode(e *Evidence, k *signing.Key) (private, public []byte, err error) {
	if private, err = encodeSigned(e, k); err != nil {
		return nil, nil, err
	}
	if public, err = encodeSigned(e.Public(), k); err != nil {
		return nil, nil, err
	}
	return private, public, nil
}

// encodeSigned marshals e, signs those bytes with k and marshals e again
// with the signature set; e itself is left as it was.
func encodeSigned(e *Evidence, k *signing.Key) ([]byte, error) {
	c := *e
	c.Signature = nil
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil || k == nil {
		return append(b, '\n'), err
	}
	if c.Signature, err = k.Sign(b); err != nil {
		return nil, err
	}
	if b, err = json.MarshalIndent(&c, "", "  "); err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteEncoded atomically writes what Encode returned into dir: the
// private document readable by its owner only (0600), the public one 0644.
// dir should be the user's alone (0700); see PrivateDirMode.
func WriteEncoded(dir string, private, public []byte) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, PrivateFile), private, 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, PublicFile), public, 0o644)
}

// Load reads an evidence document of this format, of v2 (SchemaV2: read
// as it is, v3 only adds optional fields) or of v1 (SchemaV1), upgrading a
// v1 document's untyped gate results to the typed fields; the Schema field
// keeps the id the file was written with.
func Load(path string) (*Evidence, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	e, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// Decode parses an evidence document (this format, v2 or v1, see Load).
func Decode(b []byte) (*Evidence, error) {
	var e Evidence
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("not an evidence document: %w", err)
	}
	switch e.Schema {
	case SchemaID, SchemaV2:
	case SchemaV1:
		if err := upgradeV1(b, &e); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("schema is %q, want %q (or %q, %q)", e.Schema, SchemaID, SchemaV2, SchemaV1)
	}
	return &e, nil
}

// upgradeV1 decodes each v1 gate's "result" object into its typed field:
// v2's typed results keep v1's key names.
func upgradeV1(b []byte, e *Evidence) error {
	var v1 struct {
		Gates []struct {
			Kind   string          `json:"kind"`
			Result json.RawMessage `json:"result"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(b, &v1); err != nil || len(v1.Gates) != len(e.Gates) {
		return fmt.Errorf("not a v1 evidence document: %v", err)
	}
	for i, g := range v1.Gates {
		if len(g.Result) == 0 || string(g.Result) == "null" {
			continue
		}
		var err error
		switch g.Kind {
		case "artifact":
			e.Gates[i].Artifact = &ArtifactResult{}
			err = json.Unmarshal(g.Result, e.Gates[i].Artifact)
		case "semantic":
			e.Gates[i].Semantic = &SemanticResult{}
			err = json.Unmarshal(g.Result, e.Gates[i].Semantic)
		}
		if err != nil {
			return fmt.Errorf("v1 gate %d (%s): result: %w", i, g.Kind, err)
		}
	}
	return nil
}

var reEnvChange = regexp.MustCompile(`^env ([A-Za-z_][A-Za-z0-9_]*)=.*$`)

// withholdEnvValues returns doc, the JSON encoding of e, with each
// environment value that e's launch attempts set and that may be a secret
// withheld: its name looks secret (redact.SecretName: HF_TOKEN,
// DB_PASSWORD) or the value looks like a token (redact.LooksLikeToken).
// Its "env NAME=VALUE" change and every attempt's reason with
// "NAME=VALUE" (also quoted, or with spaces around "=") are replaced,
// wherever that change or reason text appears in doc. Other values (a
// mode, a flag, a port, a path) are what a reader needs to follow the
// attempt and are kept; a value hiro learnt is secret at run time
// (redact.AddEnv) is still removed by the redaction step.
func withholdEnvValues(e *Evidence, doc []byte) []byte {
	type pair struct{ name, value string }
	var pairs []pair
	var changes []string
	for _, g := range e.Gates {
		for _, a := range g.Attempts {
			for _, ch := range a.Changes {
				m := reEnvChange.FindStringSubmatch(ch)
				if m == nil {
					continue
				}
				v := strings.TrimPrefix(ch, "env "+m[1]+"=")
				if v == "" || v == redact.Placeholder || !(redact.SecretName(m[1]) || redact.LooksLikeToken(v)) {
					continue
				}
				pairs = append(pairs, pair{m[1], v})
				changes = append(changes, ch)
			}
		}
	}
	if len(pairs) == 0 {
		return doc
	}
	// old → new texts, longest first: the replacer tries them in order.
	repl := map[string]string{}
	for _, ch := range changes {
		m := reEnvChange.FindStringSubmatch(ch)
		repl[ch] = "env " + m[1] + "=" + redact.Placeholder
	}
	for _, g := range e.Gates {
		for _, a := range g.Attempts {
			reason := strings.TrimSuffix(a.Reason, ".")
			out := reason
			for _, p := range pairs {
				re := regexp.MustCompile(`(^|[^A-Za-z0-9_])(` + regexp.QuoteMeta(p.name) + `)([ \t]*=[ \t]*)(["']?)` + regexp.QuoteMeta(p.value) + `(["']?)([^A-Za-z0-9_./-]|$)`)
				out = re.ReplaceAllString(out, "${1}${2}${3}"+redact.Placeholder+"${6}")
			}
			if out != reason {
				repl[reason] = out
			}
		}
	}
	olds := make([]string, 0, len(repl))
	for o := range repl {
		olds = append(olds, o)
	}
	sort.Slice(olds, func(i, j int) bool {
		return len(olds[i]) > len(olds[j]) || (len(olds[i]) == len(olds[j]) && olds[i] < olds[j])
	})
	var args []string
	for _, o := range olds {
		args = append(args, jsonText(o), jsonText(repl[o]))
	}
	return []byte(strings.NewReplacer(args...).Replace(string(doc)))
}

// jsonText is s as it appears inside a JSON string written by
// encoding/json (quotes left off).
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// reAbsPath matches absolute local paths inside free text (log lines).
var reAbsPath = regexp.MustCompile(`(^|[\s'"=(:])(/[^\s'"),:]+)`)

// reQuotedAbsPath matches an absolute path in single quotes (a path with
// spaces, as package shellquote writes it) or double quotes (as %q does).
var reQuotedAbsPath = regexp.MustCompile(`'/[^'\n]*'|"/[^"\n]*"`)

// RedactPaths replaces absolute paths in s with "<path>"; a quoted path
// (with spaces: '/tmp/art dir/x') is replaced whole, quotes included. A
// URL's authority ("//127.0.0.1" after "http:") is not a path: URLs keep
// their scheme, host, port and path. Punctuation that ends a sentence or a
// clause after a path ("in /srv/models; pull it", "... /srv/x.") is kept:
// it is the text's, not the path's.
func RedactPaths(s string) string {
	s = reQuotedAbsPath.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m[1:], "//") {
			return m
		}
		return redact.PathPlaceholder
	})
	return reAbsPath.ReplaceAllStringFunc(s, func(m string) string {
		sm := reAbsPath.FindStringSubmatch(m)
		if strings.HasPrefix(sm[2], "//") {
			return m
		}
		return sm[1] + redact.PathPlaceholder + trailingPunct(sm[2])
	})
}

// trailingPunct is the run of sentence punctuation (. ; ! ?) that ends
// path, or "" when it ends in none or is nothing else.
func trailingPunct(path string) string {
	rest := strings.TrimRight(path, ".;!?")
	if rest == "" || rest == "/" {
		return ""
	}
	return path[len(rest):]
}

// PrivateDirMode is the mode of a campaign's evidence directory: the
// private evidence and the logs it points to are the user's alone.
const PrivateDirMode = 0o700

// Public returns a deep copy without local paths, environment values,
// captured command output and per-file hashes: what may be published.
// Every string of it has passed through package redact (secrets known to
// this process, token shapes, secret-looking flags and keys, the user's
// home and the project's folders as placeholders). An environment value a
// launch attempt set that may be a secret (a secret-looking name, a
// token-looking value: withholdEnvValues) is withheld wherever the
// campaign repeats it: its change ("env NAME=<redacted>") in the attempt
// and in the report's sentences, and "NAME=value" in the plan's written
// reason for the attempt (in the attempt, the decisions and the report),
// so that no sentence shows the value its own change list withholds;
// other values (a port, a mode, a flag) are kept, local paths as <path>. hiro's own advice (a
// failure's next step naming a documented setting) is not the user's
// environment and is kept.
func (e *Evidence) Public() *Evidence {
	var c Evidence
	b, _ := json.Marshal(e)
	b = withholdEnvValues(e, b)
	_ = json.Unmarshal(b, &c)
	redact.Value(&c)
	// A signature is no secret, and redaction would break it (base64
	// padding reads as key=value): it is kept as it was. Encode signs the
	// public copy anew.
	c.Signature = e.Signature
	c.Plan = ""
	c.Fingerprints.Files = nil
	delete(c.Host, "disks")
	delete(c.Host, "hostname")
	for gi := range c.Gates {
		g := &c.Gates[gi]
		g.Reason = RedactPaths(g.Reason)
		for ci := range g.Checks {
			g.Checks[ci].Output = ""
			g.Checks[ci].Name = RedactPaths(g.Checks[ci].Name)
			g.Checks[ci].Detail = RedactPaths(g.Checks[ci].Detail)
		}
		for ai := range g.Attempts {
			a := &g.Attempts[ai]
			a.LogPath = ""
			a.Effective = nil
			for i, ch := range a.Changes {
				if m := reEnvChange.FindStringSubmatch(ch); m != nil {
					// A value that may be a secret is withheld; any
					// other keeps its meaning, local paths as <path>.
					if v := strings.TrimPrefix(ch, "env "+m[1]+"="); redact.SecretName(m[1]) || redact.LooksLikeToken(v) {
						a.Changes[i] = "env " + m[1] + "=" + redact.Placeholder
					} else {
						a.Changes[i] = RedactPaths(ch)
					}
				}
			}
			if a.Failure != nil {
				a.Failure.RootCause = RedactPaths(a.Failure.RootCause)
				for i, l := range a.Failure.LogTail {
					a.Failure.LogTail[i] = RedactPaths(l)
				}
			}
		}
		if g.Failure != nil {
			g.Failure.RootCause = RedactPaths(g.Failure.RootCause)
			g.Failure.LogTail = nil
		}
		if g.Artifact != nil {
			g.Artifact.Paths = nil
		}
		if g.Semantic != nil {
			g.Semantic.Paths = nil
		}
		if g.Shadow != nil {
			g.Shadow.PairRecords = nil // hashes of users' requests stay private
		}
	}
	for i, s := range c.Report.Sections {
		for j, it := range s.Items {
			c.Report.Sections[i].Items[j] = RedactPaths(it)
		}
	}
	c.Report.Summary = RedactPaths(c.Report.Summary)
	if strings.TrimSpace(c.TerminationReason) != "" {
		c.TerminationReason = RedactPaths(c.TerminationReason)
	}
	return &c
}
