package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
)

// The fixture models were trained on these exact bytes and every claim's
// provenance records Hash: a change here is a new prompt version and a
// retraining, never an accident.
func TestPromptBytesArePinned(t *testing.T) {
	const (
		wantHash       = "04206a478371d4a620be915b0c381010ea62ded1c66540188a70579d90cf3def"
		wantSchemaHash = "27ab3e348a761e5a0d6e4f2640fad6a2feb19150d2c5a2b865b3947ac22e71b5"
	)
	if got := Hash(); got != wantHash {
		t.Errorf("prompt.Hash() = %s, want %s: the prompt texts or layout changed", got, wantHash)
	}
	if got := SchemaHash(); got != wantSchemaHash {
		t.Errorf("prompt.SchemaHash() = %s, want %s", got, wantSchemaHash)
	}
	for name, c := range map[string]struct{ text, sha string }{
		"system.txt":       {SystemText, "6f4cea4c9a64eed9a020003f66d3c8362312e4a696af71a61586d8f27b654b4a"},
		"instructions.txt": {InstructionsText, "4ff076afd92a338e35c0ee9033e45171985cac6b3da5c45e0cff8c407c2588d2"},
		"schema.json":      {ClaimsSchemaText, "27ab3e348a761e5a0d6e4f2640fad6a2feb19150d2c5a2b865b3947ac22e71b5"},
		"ready.txt":        {ReadyText, "c71c5c5cb7962ff961f6104d270992d5a0f307053365c1088c9097ec9665d150"},
	} {
		s := sha256.Sum256([]byte(c.text))
		if got := hex.EncodeToString(s[:]); got != c.sha {
			t.Errorf("texts/%s has sha256 %s, want %s (the bytes the fixture models were trained on)", name, got, c.sha)
		}
	}
}

func TestUserLayoutIsTheTrainedOne(t *testing.T) {
	in := Input{HeadingPath: []string{"History", "1980s"}, Before: []string{"A one.", "B\ntwo."}, Target: "It  rained in Paris.", After: nil}
	got := User(in)
	want := Layout([]string{"History", "1980s"}, []string{"A one.", "B two."}, "It  rained in Paris.", nil)
	if got != want {
		t.Fatalf("User renders\n%s\nthe model was trained on\n%s", got, want)
	}
	if !strings.Contains(got, "\nIt  rained in Paris.\n") {
		t.Error("the target sentence was rewritten; quotes must be copyable byte for byte")
	}
	var v map[string]any
	if err := json.Unmarshal(SchemaJSON(), &v); err != nil {
		t.Fatal(err)
	}
	if len(Hash()) != 64 || Hash() == SchemaHash() {
		t.Error("hashes not distinct sha256 hex")
	}
}

func TestReadyPromptIsTheTrainedOne(t *testing.T) {
	if strings.TrimSpace(ReadyText) != config.DefaultProbePrompt || ReadyPrompt != config.DefaultProbePrompt {
		t.Fatalf("config.DefaultProbePrompt %q differs from the trained READY prompt %q", config.DefaultProbePrompt, ReadyText)
	}
}

func TestParseUserInvertsUser(t *testing.T) {
	for _, in := range []Input{
		{HeadingPath: []string{"Intro", "Facts"}, Before: []string{"One.", "Two."}, Target: "The bridge opened in 1932.", After: []string{"Three."}},
		{Target: "Alone."},
	} {
		got, ok := ParseUser(User(in))
		if !ok {
			t.Fatalf("ParseUser(User(%+v)) not recognised", in)
		}
		if User(got) != User(in) || got.Target != in.Target || len(got.Before) != len(in.Before) || len(got.HeadingPath) != len(in.HeadingPath) {
			t.Errorf("ParseUser(User(%+v)) = %+v", in, got)
		}
	}
	if _, ok := ParseUser("Summarise this text."); ok {
		t.Error("a foreign user message was recognised as an extraction request")
	}
	if _, ok := ParseUser(strings.Replace(User(Input{Target: "x"}), "JSON Schema:", "Schema:", 1)); ok {
		t.Error("a message with another schema heading was recognised")
	}
}

// Labels are the layout's own: each opens a line of a rendered message,
// in order (a label renamed in Layout alone would leave extract's
// scaffolding check blind to it).
func TestLabelsAreTheLayouts(t *testing.T) {
	msg := Layout([]string{"H"}, []string{"B"}, "T", []string{"A"})
	at := 0
	for _, l := range Labels {
		i := strings.Index(msg[at:], "\n"+l)
		if i < 0 {
			t.Fatalf("label %q does not open a line of the layout after byte %d:\n%s", l, at, msg)
		}
		at += i + 1
	}
}
