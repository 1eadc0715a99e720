package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// Revisions used by the tests: testRev is pinned; otherRev is another commit.
const (
	testRepo = "acme/tiny-model"
	testRev  = "49ec31ec0975e46a1aeef24186a45f11be3042b8"
	otherRev = "0123456789abcdef0123456789abcdef01234567"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writeFile writes content at dir/rel, creating parent directories.
func writeFile(t testing.TB, dir, rel string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// testFiles is a small model directory: two shards, config, tokenizer and
// a chat template in a subdirectory.
func testFiles() map[string][]byte {
	big := make([]byte, 3*ReadBufferSize+123) // spans several reads
	for i := range big {
		big[i] = byte(i * 7)
	}
	return map[string][]byte{
		"model-00001-of-00002.safetensors": big,
		"model-00002-of-00002.safetensors": []byte("shard two"),
		"config.json":                      []byte(`{"architectures":["MistralForCausalLM"]}`),
		"tokenizer.json":                   []byte(`{"version":"1.0"}`),
		"templates/chat_template.jinja":    []byte("{{ messages }}"),
	}
}

// plainDir builds testFiles in a fresh temporary directory.
func plainDir(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	files := testFiles()
	for rel, c := range files {
		writeFile(t, dir, rel, c)
	}
	return dir, files
}

// hfCache builds a fake Hugging Face hub cache under a fresh temporary
// directory: hub/models--acme--tiny-model/{blobs,refs/main,snapshots/testRev}
// where each snapshot file is a relative symlink into blobs/. Large files'
// blobs are named by their SHA-256 (as the hub names LFS files); small ones
// by a 40-hex git blob id. It returns the repository cache directory, the
// snapshot directory and the files.
func hfCache(t *testing.T) (repoDir, snapDir string, files map[string][]byte) {
	t.Helper()
	hub := filepath.Join(t.TempDir(), "hub")
	repoDir = filepath.Join(hub, "models--acme--tiny-model")
	snapDir = filepath.Join(repoDir, "snapshots", testRev)
	files = testFiles()
	writeFile(t, repoDir, "refs/main", []byte(testRev))
	for rel, c := range files {
		blob := sha(c)
		if len(c) < 1024 { // git blob ids are 40 hex digits
			blob = blob[:40]
		}
		writeFile(t, filepath.Join(repoDir, "blobs"), blob, c)
		link := filepath.Join(snapDir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		target, err := filepath.Rel(filepath.Dir(link), filepath.Join(repoDir, "blobs", blob))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return repoDir, snapDir, files
}
