package corpus

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A corpus folder that does not exist (a typo) is named as missing, with
// the nearest folder beside it, and never told to be frozen (issue 26, a
// new user's finding: 'extract --corpus corpora/hiro-mni' said "freeze it
// with 'hiro corpus freeze corpora/hiro-mni'", which then failed).
func TestMissingCorpusFolderIsNamedNotToBeFrozen(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "hiro-mini", DocsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := ReadManifest(filepath.Join(root, "hiro-mni"))
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no such folder") ||
		!strings.Contains(err.Error(), "did you mean "+filepath.Join(root, "hiro-mini")) || strings.Contains(err.Error(), "freeze") || strings.Contains(err.Error(), "file does not exist") {
		t.Errorf("missing folder: %v", err)
	}
	// The folder exists but is not frozen: the advice to freeze it stays.
	_, err = ReadManifest(filepath.Join(root, "hiro-mini"))
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "hiro corpus freeze") || strings.Contains(err.Error(), "file does not exist") {
		t.Errorf("unfrozen folder: %v", err)
	}
}
