package extract

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every setting that changes what a run writes must match on resume; the
// refusal names the field with its old and new values.
func TestResumeRefusesOtherSettings(t *testing.T) {
	base := RunInfo{Schema: RunSchema, Backend: "b", BaseURL: "http://127.0.0.1:8000", Model: "m", PromptVersion: "v1", PromptHash: "p", SchemaHash: "s",
		Temperature: 0, Seed: 42, MaxTokens: 128, MaxRepairs: 1, MaxDocBytes: 1000, MaxRequestBytes: 2000,
		Input: &RunInput{CorpusName: "c", CorpusDigest: "d1"}, SpanUnit: SpanUnit}
	for _, c := range []struct {
		field, old, new string
		change          func(*RunInfo)
	}{
		{"backend", `"b"`, `"b2"`, func(i *RunInfo) { i.Backend = "b2" }},
		{"base_url", `"http://127.0.0.1:8000"`, `"http://127.0.0.1:9000"`, func(i *RunInfo) { i.BaseURL = "http://127.0.0.1:9000" }},
		{"model", `"m"`, `"m2"`, func(i *RunInfo) { i.Model = "m2" }},
		{"prompt_version", `"v1"`, `"v2"`, func(i *RunInfo) { i.PromptVersion = "v2" }},
		{"prompt_hash", "p", "p2", func(i *RunInfo) { i.PromptHash = "p2" }},
		{"schema_hash", "s", "s2", func(i *RunInfo) { i.SchemaHash = "s2" }},
		{"temperature", "0", "0.7", func(i *RunInfo) { i.Temperature = 0.7 }},
		{"seed", "42", "7", func(i *RunInfo) { i.Seed = 7 }},
		{"max_tokens", "128", "256", func(i *RunInfo) { i.MaxTokens = 256 }},
		{"max_repairs", "1", "0", func(i *RunInfo) { i.MaxRepairs = 0 }},
		{"max_doc_bytes", "1000", "10", func(i *RunInfo) { i.MaxDocBytes = 10 }},
		{"max_request_bytes", "2000", "20", func(i *RunInfo) { i.MaxRequestBytes = 20 }},
		{"input", "corpus c (digest d1)", "corpus c (digest d2)", func(i *RunInfo) { i.Input = &RunInput{CorpusName: "c", CorpusDigest: "d2"} }},
		{"input", "corpus c (digest d1)", "paths /docs", func(i *RunInfo) { i.Input = &RunInput{Paths: []string{"/docs"}} }},
		{"input", "corpus c (digest d1)", "(not recorded)", func(i *RunInfo) { i.Input = nil }},
		{"max_doc_bytes", "1000", "(not recorded: run.json of an older hiro)", func(i *RunInfo) { i.MaxDocBytes = 0 }},
	} {
		dir := t.TempDir()
		o, err := openOut(dir, base)
		if err != nil {
			t.Fatal(err)
		}
		o.close()
		if o, err = openOut(dir, base); err != nil {
			t.Fatalf("resume with the same settings: %v", err)
		}
		o.close()
		other := base
		c.change(&other)
		_, err = openOut(dir, other)
		if !errors.Is(err, ErrRunMismatch) {
			t.Errorf("%s changed: %v, want ErrRunMismatch", c.field, err)
			continue
		}
		want := c.field + " was " + c.old + ", now " + c.new
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "new --out directory") {
			t.Errorf("%s changed: %v; want it to say %q and what to do", c.field, err, want)
		}
	}
	// The shards of one run may reach different replicas: merge ignores
	// the base URL, not the rest.
	other := base
	other.BaseURL = "http://10.0.0.2:8000"
	if d := sameRun(base, other); d != "" {
		t.Errorf("shards with different base URLs: %s", d)
	}
	other.MaxDocBytes = 5
	if d := sameRun(base, other); !strings.Contains(d, "max_doc_bytes") {
		t.Errorf("shards with different max_doc_bytes: %q", d)
	}
}

// TestSecondRunIntoOneDirectoryIsRefused: while one run holds an output
// directory, a second run into it is refused with ErrOutBusy naming the
// holder's pid, before it reads or truncates anything; once the first
// ends, the directory resumes.
func TestSecondRunIntoOneDirectoryIsRefused(t *testing.T) {
	info := RunInfo{Schema: RunSchema, Backend: "b", Model: "m", PromptHash: "p", SchemaHash: "s", SpanUnit: SpanUnit}
	dir := t.TempDir()
	first, err := openOut(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.claims.WriteString(`{"doc_id":"a"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	_, err = openOut(dir, info)
	if !errors.Is(err, ErrOutBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "another --out") {
		t.Fatalf("a second run beside the first: %v; want ErrOutBusy naming pid %d and what to do", err, os.Getpid())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ClaimsFile)); string(b) != `{"doc_id":"a"}`+"\n" {
		t.Errorf("the refused run changed the first's claims: %q", b)
	}
	first.close()
	again, err := openOut(dir, info)
	if err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	again.close()
}
