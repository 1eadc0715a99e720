package signing

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

func keysIn(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "keys")
	t.Setenv("HIRO_KEY_DIR", d)
	return d
}

// sign returns doc with its signature embedded, as evidence does it: the
// struct marshalled again with the field set.
func sign(t *testing.T, k *Key, doc map[string]any) []byte {
	t.Helper()
	b, _ := json.MarshalIndent(doc, "", "  ")
	s, err := k.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	doc[Field] = s
	out, _ := json.MarshalIndent(doc, "", "  ")
	delete(doc, Field)
	return out
}

func TestSignVerifyAndTamper(t *testing.T) {
	k, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{"verdict": "qualified", "exit_code": 0, "ratio": 0.1, "html": "<a & b>", "gates": []any{map[string]any{"status": "passed"}}}
	signed := sign(t, k, doc)
	s, err := Verify(signed)
	if err != nil || s.KeyID != k.Public().ID() || s.PublicKey != k.Public().String() {
		t.Fatalf("verify: %+v %v", s, err)
	}
	// Re-indenting keeps it valid: the canonical form has no whitespace.
	var compact bytes.Buffer
	json.Compact(&compact, signed)
	if _, err := Verify(compact.Bytes()); err != nil {
		t.Errorf("compacted copy: %v", err)
	}
	// Any edit breaks it: a value, a number's text, a field added.
	for _, edit := range [][2]string{
		{`"qualified"`, `"not_qualified"`},
		{`"exit_code": 0`, `"exit_code": 1`},
		{`"ratio": 0.1`, `"ratio": 0.10`},
		{`"passed"`, `"failed"`},
		{`"verdict"`, `"extra": 1, "verdict"`},
	} {
		forged := bytes.Replace(signed, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(forged, signed) {
			t.Fatalf("edit %q did not apply", edit[0])
		}
		if _, err := Verify(forged); !errors.Is(err, ErrBadSignature) {
			t.Errorf("edit %q → %q verified: %v", edit[0], edit[1], err)
		}
	}
	// The signature of another key, or a key id that does not match.
	other, _ := Generate()
	swapped := bytes.Replace(signed, []byte(k.Public().String()), []byte(other.Public().String()), 1)
	if _, err := Verify(swapped); !errors.Is(err, ErrBadSignature) {
		t.Errorf("public key swapped: %v", err)
	}
	b, _ := json.Marshal(doc)
	if _, err := Verify(b); !errors.Is(err, ErrUnsigned) {
		t.Errorf("unsigned: %v", err)
	}
}

func TestKeyCreatedOnceOwnerOnly(t *testing.T) {
	dir := keysIn(t)
	var wg sync.WaitGroup
	keys := make([]*Key, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreate()
			if err != nil {
				t.Error(err)
				return
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k == nil || keys[0] == nil || !bytes.Equal(k.Public(), keys[0].Public()) {
			t.Fatal("concurrent first uses made different keys")
		}
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("keys folder mode %v, want 0700", di.Mode().Perm())
	}
	again, err := LoadOrCreate()
	if err != nil || !bytes.Equal(again.Public(), keys[0].Public()) {
		t.Fatalf("second use made another key: %v", err)
	}
}

// A key file others may read, one another user owns and a keys folder
// another user owns are refused, naming the file and what to do.
func TestKeyFileThatIsNotPrivateIsRefused(t *testing.T) {
	dir := keysIn(t)
	if _, err := LoadOrCreate(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeyFile)
	os.Chmod(path, 0o640)
	if _, err := LoadOrCreate(); err == nil || !strings.Contains(err.Error(), "may be read by others") || !strings.Contains(err.Error(), path) {
		t.Errorf("a 0640 key: %v", err)
	}
	os.Chmod(path, 0o600)
	testsupport.GiveToNobody(t, path)
	if _, err := LoadOrCreate(); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a key owned by nobody: %v", err)
	}
	os.Lchown(path, os.Getuid(), os.Getgid())
	testsupport.GiveToNobody(t, dir)
	if _, err := LoadOrCreate(); err == nil || !strings.Contains(err.Error(), "signing key folder") {
		t.Errorf("a keys folder owned by nobody: %v", err)
	}
}

func TestTrustList(t *testing.T) {
	keysIn(t)
	own, err := LoadOrCreate()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Generate()
	doc := sign(t, other, map[string]any{"verdict": "qualified"})
	tr, err := LoadTrust()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Check(doc); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "hiro trust add "+other.Public().String()) ||
		!strings.Contains(err.Error(), filepath.Dir(tr.Path)) || !strings.Contains(err.Error(), "HIRO_STATE_HOME") {
		t.Fatalf("a foreign key (the refusal names the trust list's folder and what moves it): %v", err)
	}
	if _, tk, err := tr.Check(sign(t, own, map[string]any{"verdict": "qualified"})); err != nil || !tk.Own {
		t.Fatalf("own key: %+v %v", tk, err)
	}
	if err := tr.Add(other.Public(), "ci  runner"); err != nil {
		t.Fatal(err)
	}
	tr, err = LoadTrust()
	if err != nil {
		t.Fatal(err)
	}
	if _, tk, err := tr.Check(doc); err != nil || tk.Name != "ci runner" {
		t.Fatalf("after trust add: %+v %v", tk, err)
	}
	if _, err := tr.Remove(own.Public().ID()); err == nil {
		t.Error("the own key was removed")
	}
	if _, err := tr.Remove(other.Public().ID()); err != nil {
		t.Fatal(err)
	}
	tr, _ = LoadTrust()
	if _, _, err := tr.Check(doc); !errors.Is(err, ErrUntrusted) {
		t.Errorf("after trust remove: %v", err)
	}
	// A trust list another user could have written is refused.
	tr.Add(other.Public(), "x")
	testsupport.GiveToNobody(t, tr.Path)
	if _, err := LoadTrust(); err == nil || !strings.Contains(err.Error(), "trust list refused") {
		t.Errorf("a trust list owned by nobody: %v", err)
	}
}
