package activation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/signing"
)

// Verify refuses the document at path (what names it: "evidence",
// "production record") unless it is this user's file, in a folder no one
// else may write, and its signature verifies with a key of p.Trust (nil:
// the user's list), or it is unsigned and p.Unsigned (--trust-unsigned).
// It returns the sentence the switch's record keeps ("signed by SHA256:... (this hiro's own key)"). Refusals are a
// *RefusedError on field "signature" (or "file" for the owner and mode)
// saying which and why.
func (p Accept) Verify(path, what string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if err := private.Check(path, fi); err != nil {
		return "", refuse("file", "%s: %v", what, err)
	}
	if err := private.CheckFolder(filepath.Dir(path), what+" folder"); err != nil {
		return "", refuse("file", "%v", err)
	}
	doc := make([]byte, fi.Size())
	if _, err := f.ReadAt(doc, 0); err != nil {
		return "", err
	}
	t := p.Trust
	if t == nil {
		if t, err = signing.LoadTrust(); err != nil {
			return "", err
		}
	}
	sig, tk, err := t.Check(doc)
	switch {
	case err == nil:
		return fmt.Sprintf("signed by %s (%s)", sig.KeyID, tk.Name), nil
	case errors.Is(err, signing.ErrUnsigned) && p.Unsigned:
		return "unsigned, accepted with --trust-unsigned", nil
	case errors.Is(err, signing.ErrUnsigned):
		return "", refuse("signature", "%s %s is unsigned: written by a hiro older than signing, or its signature was removed; hiro acts only on what a trusted key signed. If you know where it came from, pass --trust-unsigned (the switch's record says so)", what, path)
	case errors.Is(err, signing.ErrBadSignature):
		return "", refuse("signature", "%s %s: %v (edited by hand?); run the campaign again", what, path, err)
	case errors.Is(err, signing.ErrUntrusted):
		return "", refuse("signature", "%s %s is %v", what, path, err)
	}
	return "", err
}
