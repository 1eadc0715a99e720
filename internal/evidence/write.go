package evidence

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/redact"
)

// File names inside a campaign's evidence directory.
const (
	PrivateFile = "evidence.private.json"
	PublicFile  = "evidence.json"
	ReportFile  = "report.md"
)

// WriteBoth atomically writes the private document and its public copy
// into dir (PrivateFile, PublicFile).
func WriteBoth(dir string, e *Evidence) error {
	priv, pub, err := Encode(e)
	if err != nil {
		return err
	}
	return WriteEncoded(dir, priv, pub)
}

// Encode returns the indented JSON of the private document and of its
// public copy: a snapshot that later changes to e do not affect.
func Encode(e *Evidence) (private, public []byte, err error) {
	if private, err = json.MarshalIndent(e, "", "  "); err != nil {
		return nil, nil, err
	}
	if public, err = json.MarshalIndent(e.Public(), "", "  "); err != nil {
		return nil, nil, err
	}
	return append(private, '\n'), append(public, '\n'), nil
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

// Load reads an evidence document of this format or of v1 (SchemaV1),
// upgrading a v1 document's untyped gate results to the typed fields; the
// Schema field keeps the id the file was written with.
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

// Decode parses an evidence document (this format or v1, see Load).
func Decode(b []byte) (*Evidence, error) {
	var e Evidence
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("not an evidence document: %w", err)
	}
	switch e.Schema {
	case SchemaID:
	case SchemaV1:
		if err := upgradeV1(b, &e); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("schema is %q, want %q (or %q)", e.Schema, SchemaID, SchemaV1)
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

// reAbsPath matches absolute local paths inside free text (log lines).
var reAbsPath = regexp.MustCompile(`(^|[\s'"=(:])(/[^\s'"),:]+)`)

// RedactPaths replaces absolute paths in s with "<path>". A URL's
// authority ("//127.0.0.1" after "http:") is not a path: URLs keep their
// scheme, host, port and path.
func RedactPaths(s string) string {
	return reAbsPath.ReplaceAllStringFunc(s, func(m string) string {
		sm := reAbsPath.FindStringSubmatch(m)
		if strings.HasPrefix(sm[2], "//") {
			return m
		}
		return sm[1] + redact.PathPlaceholder
	})
}

// PrivateDirMode is the mode of a campaign's evidence directory: the
// private evidence and the logs it points to are the user's alone.
const PrivateDirMode = 0o700

// Public returns a deep copy without local paths, environment values,
// captured command output and per-file hashes: what may be published.
// Every string of it has passed through package redact (secrets known to
// this process, token shapes, secret-looking flags and keys, the user's
// home and the project's folders as placeholders).
func (e *Evidence) Public() *Evidence {
	var c Evidence
	b, _ := json.Marshal(e)
	_ = json.Unmarshal(b, &c)
	redact.Value(&c)
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
					a.Changes[i] = "env " + m[1] + "=<redacted>"
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
