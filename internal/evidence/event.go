package evidence

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/redact"
)

// EventSchema names the format of an event file.
const EventSchema = "hiro.event/v1"

// EventsDir is the folder, inside a campaign's evidence folder, of the
// events that happened after the campaign finished.
const EventsDir = "events"

// Event kinds.
const (
	// EventProductionRestored: a later hiro restored the production a
	// finished campaign had left down (exit 4), from its lease.
	EventProductionRestored = "production_restored"
	// EventLeaseReleased: a later hiro settled a finished campaign's lease
	// with nothing to restore.
	EventLeaseReleased = "lease_released"
)

// Event records something that happened to a campaign after its evidence
// was final (a finished campaign's evidence is never rewritten): a manual
// restore, a recovery. It is public (no secrets, no local paths).
type Event struct {
	// Schema is EventSchema; Campaign the campaign's evidence id.
	Schema   string `json:"schema"`
	Campaign string `json:"campaign"`
	// Kind is one of the Event* kinds.
	Kind string `json:"kind"`
	// At is when it happened (RFC 3339, UTC).
	At time.Time `json:"at"`
	// By says which hiro did it ("hiro recover", pid).
	By string `json:"by"`
	// Summary says what happened in one sentence.
	Summary string `json:"summary"`
	// Restored is production's verification, when it was restored.
	Restored *Restored `json:"restored,omitempty"`
	// ConfigHash is production's configuration hash now;
	// ConfigUnchanged compares it with the campaign's ConfigHashBefore.
	ConfigHash      string `json:"config_hash,omitempty"`
	ConfigUnchanged bool   `json:"config_unchanged"`
}

// WriteEvent writes ev into dir/events/<time>-<kind>.json (atomically,
// every string through package redact) and returns the path.
func WriteEvent(dir string, ev *Event) (string, error) {
	ev.Schema = EventSchema
	if ev.At.IsZero() {
		ev.At = time.Now().UTC()
	}
	redact.Value(ev)
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return "", err
	}
	name := ev.At.UTC().Format("20060102T150405.000000000Z") + "-" + strings.ReplaceAll(ev.Kind, "/", "_") + ".json"
	path := filepath.Join(dir, EventsDir, name)
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("writing the event: %w", err)
	}
	return path, nil
}

// Finished reports whether the campaign ended (its verdict is final):
// such evidence is never rewritten, later events go to WriteEvent.
func (e *Evidence) Finished() bool {
	return e.Verdict != VerdictRunning && e.FinishedAt != nil
}
