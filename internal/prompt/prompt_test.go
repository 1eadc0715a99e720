package prompt

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestUserLayout(t *testing.T) {
	got := User(Input{HeadingPath: []string{"History", "1980s"}, Before: []string{"A one.", "B\ntwo."}, Target: "It  rained in Paris.", After: nil})
	lines := strings.Split(got, "\n")
	if len(lines) != 6 {
		t.Fatalf("want 6 lines, got %d:\n%s", len(lines), got)
	}
	want := []string{"Heading: History > 1980s", "Before: A one. B two.", "Target: It rained in Paris.", "After: (none)"}
	for i, w := range want {
		if lines[2+i] != w {
			t.Errorf("line %d = %q, want %q", 2+i, lines[2+i], w)
		}
	}
	if !strings.HasPrefix(lines[1], "Reply with JSON matching this schema: {\"type\":\"object\"") {
		t.Errorf("schema line = %q", lines[1])
	}
	var v map[string]any
	if err := json.Unmarshal(SchemaJSON(), &v); err != nil {
		t.Fatal(err)
	}
	if len(Hash()) != 64 || Hash() == SchemaHash() {
		t.Error("hashes not distinct sha256 hex")
	}
}
