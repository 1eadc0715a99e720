package extract

import (
	"errors"
	"testing"
)

func TestResumeRefusesOtherSettings(t *testing.T) {
	dir := t.TempDir()
	info := RunInfo{Schema: RunSchema, Backend: "b", Model: "m", PromptHash: "p", SchemaHash: "s", MaxTokens: 128, MaxRepairs: 1}
	if _, err := openOut(dir, info); err != nil {
		t.Fatal(err)
	}
	if _, err := openOut(dir, info); err != nil {
		t.Fatalf("resume with the same settings: %v", err)
	}
	other := info
	other.MaxTokens = 256
	if _, err := openOut(dir, other); !errors.Is(err, ErrRunMismatch) {
		t.Fatalf("resume with another --max-tokens: %v, want ErrRunMismatch", err)
	}
	other = info
	other.MaxRepairs = 0
	if _, err := openOut(dir, other); !errors.Is(err, ErrRunMismatch) {
		t.Fatalf("resume with another --max-repairs: %v, want ErrRunMismatch", err)
	}
}
