package prompt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/fixture"
)

func TestUserLayoutIsTheTrainedOne(t *testing.T) {
	in := Input{HeadingPath: []string{"History", "1980s"}, Before: []string{"A one.", "B\ntwo."}, Target: "It  rained in Paris.", After: nil}
	got := User(in)
	want := fixture.ExtractionUserMessage([]string{"History", "1980s"}, []string{"A one.", "B two."}, "It  rained in Paris.", nil)
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
	if strings.TrimSpace(fixture.ReadyPrompt) != config.DefaultProbePrompt {
		t.Fatalf("config.DefaultProbePrompt %q differs from the fixture's READY prompt %q", config.DefaultProbePrompt, fixture.ReadyPrompt)
	}
}
