package signing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/private"
)

// TrustFile is the trust list's file name in the keys folder: one key a
// line, "ed25519:BASE64 name", '#' comments.
const TrustFile = "trusted_keys"

// TrustedKey is one key of the trust list.
type TrustedKey struct {
	Key PublicKey
	// Name is what the user called it ("ci runner"); Own marks this
	// user's own signing key, trusted without being listed.
	Name string
	Own  bool
}

// Trust is the list of keys whose signatures hiro acts on.
type Trust struct {
	Keys []TrustedKey
	// Path is the trust list's file.
	Path string
}

// LoadTrust reads the trust list (TrustFile in the keys folder) and adds
// the user's own key when there is one. A missing list is empty; one that
// another user owns or others may write is refused (it says whose
// evidence production may switch to).
func LoadTrust() (*Trust, error) {
	dir, err := private.Keys.Path()
	if err != nil {
		return nil, err
	}
	t := &Trust{Path: filepath.Join(dir, TrustFile)}
	if k, err := Load(); err == nil {
		t.Keys = append(t.Keys, TrustedKey{Key: k.Public(), Name: "this hiro's own key (" + k.Path + ")", Own: true})
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if _, err := private.Keys.Check(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return t, nil
		}
		return nil, err
	}
	b, err := readTrustFile(t.Path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keyText, name, _ := strings.Cut(line, " ")
		k, err := ParsePublicKey(keyText)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w; fix or remove the line ('hiro trust remove')", t.Path, n, err)
		}
		if t.find(k) == nil {
			t.Keys = append(t.Keys, TrustedKey{Key: k, Name: strings.TrimSpace(name)})
		}
	}
	return t, nil
}

func readTrustFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := private.Check(path, fi); err != nil {
		return nil, fmt.Errorf("trust list refused: %w", err)
	}
	return os.ReadFile(path)
}

func (t *Trust) find(k PublicKey) *TrustedKey {
	for i := range t.Keys {
		if bytes.Equal(t.Keys[i].Key, k) {
			return &t.Keys[i]
		}
	}
	return nil
}

// Trusted returns the trust list's entry for the signature's key, nil
// when the key is not trusted.
func (t *Trust) Trusted(s *Signature) *TrustedKey {
	if s == nil {
		return nil
	}
	k, err := ParsePublicKey(s.PublicKey)
	if err != nil {
		return nil
	}
	return t.find(k)
}

// ErrUntrusted: the document verifies, but with a key the user does not
// trust.
var ErrUntrusted = errors.New("signed with a key you do not trust")

// Check verifies doc (Verify) and that its key is trusted; it returns the
// signature and the trust entry. Errors wrap ErrUnsigned, ErrBadSignature
// or ErrUntrusted, each saying what to do.
func (t *Trust) Check(doc []byte) (*Signature, *TrustedKey, error) {
	s, err := Verify(doc)
	if err != nil {
		return s, nil, err
	}
	if tk := t.Trusted(s); tk != nil {
		return s, tk, nil
	}
	return s, nil, fmt.Errorf("%w: %s (%s); the keys trusted here are in %s (%s, else the private state home: a campaign run with another HOME or %s signed with that home's key); if you trust the hiro that wrote it, run 'hiro trust add %s'", ErrUntrusted, s.KeyID, s.PublicKey, t.where(), private.Keys.Env, private.StateHomeEnv, s.PublicKey)
}

// where names the folder of the trust list (or "this hiro's keys folder"
// when the list has no path, as a list built in memory).
func (t *Trust) where() string {
	if t.Path == "" {
		return "this hiro's keys folder"
	}
	return filepath.Dir(t.Path)
}

// Add puts k on the trust list under name and writes the list (0600,
// atomically). A key already there is an error naming its entry.
func (t *Trust) Add(k PublicKey, name string) error {
	if tk := t.find(k); tk != nil {
		return fmt.Errorf("key %s is already trusted (%s)", k.ID(), tk.Name)
	}
	t.Keys = append(t.Keys, TrustedKey{Key: k, Name: strings.Join(strings.Fields(name), " ")})
	return t.write()
}

// Remove takes the key with fingerprint or text id off the trust list.
// The own key cannot be removed (move the key file away to stop using it).
func (t *Trust) Remove(id string) (TrustedKey, error) {
	for i, tk := range t.Keys {
		if tk.Key.ID() == id || tk.Key.String() == id {
			if tk.Own {
				return tk, fmt.Errorf("%s is this hiro's own key: it is always trusted; to stop using it, move %s away (hiro then makes a new one)", id, strings.TrimSuffix(strings.TrimPrefix(tk.Name, "this hiro's own key ("), ")"))
			}
			t.Keys = append(t.Keys[:i], t.Keys[i+1:]...)
			return tk, t.write()
		}
	}
	return TrustedKey{}, fmt.Errorf("no trusted key %s ('hiro trust' lists them)", id)
}

func (t *Trust) write() error {
	if _, err := Dir(); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Keys whose signed evidence and activation records hiro acts on ('hiro trust').\n")
	for _, tk := range t.Keys {
		if tk.Own {
			continue
		}
		fmt.Fprintf(&b, "%s %s\n", tk.Key, tk.Name)
	}
	return atomicfile.WriteFile(t.Path, []byte(b.String()), private.FileMode)
}
