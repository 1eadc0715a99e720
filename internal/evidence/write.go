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

// Load reads an evidence document and checks its schema id.
func Load(path string) (*Evidence, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var e Evidence
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: not an evidence document: %w", path, err)
	}
	if e.Schema != SchemaID {
		return nil, fmt.Errorf("%s: schema is %q, want %q", path, e.Schema, SchemaID)
	}
	return &e, nil
}

var reEnvChange = regexp.MustCompile(`^env ([A-Za-z_][A-Za-z0-9_]*)=.*$`)

// reAbsPath matches absolute local paths inside free text (log lines).
var reAbsPath = regexp.MustCompile(`(^|[\s'"=(:])(/[^\s'"),:]+)`)

// RedactPaths replaces absolute paths in s with "<path>".
func RedactPaths(s string) string {
	return reAbsPath.ReplaceAllString(s, "${1}<path>")
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
			g.Checks[ci].Detail = RedactPaths(g.Checks[ci].Detail)
		}
		for ai := range g.Attempts {
			a := &g.Attempts[ai]
			a.LogPath = ""
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
		delete(g.Result, "files")
		delete(g.Result, "paths")
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
