package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/private"
)

// Algorithm is Signature.Algorithm: Ed25519 (RFC 8032), the only one.
const Algorithm = "ed25519"

// Field is the name of the embedded signature in a signed JSON object.
const Field = "signature"

// KeyFile is the private key's file name in the keys folder.
const KeyFile = "signing.key"

// Signature is a document's embedded signature: an Ed25519 signature over
// Canonical(document), the document without this field.
type Signature struct {
	// Algorithm is "ed25519".
	Algorithm string `json:"algorithm"`
	// PublicKey is the signer's public key, "ed25519:" and the 32 bytes in
	// standard base64: a reader verifies with it alone.
	PublicKey string `json:"public_key"`
	// KeyID is the key's fingerprint, "SHA256:" and the unpadded base64
	// of the SHA-256 of the 32 key bytes (as ssh-keygen -l writes it).
	KeyID string `json:"key_id"`
	// Value is the 64-byte signature in standard base64.
	Value string `json:"value"`
}

// PublicKey is an Ed25519 public key.
type PublicKey ed25519.PublicKey

// String returns "ed25519:" and the key in standard base64: the form
// Signature.PublicKey, 'hiro trust add' and the trust list use.
func (p PublicKey) String() string {
	return Algorithm + ":" + base64.StdEncoding.EncodeToString(p)
}

// ID returns the key's fingerprint (Signature.KeyID).
func (p PublicKey) ID() string {
	s := sha256.Sum256(p)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(s[:])
}

// ParsePublicKey reads "ed25519:BASE64" (or the bare base64 of the 32
// bytes).
func ParsePublicKey(s string) (PublicKey, error) {
	s = strings.TrimSpace(s)
	b64 := strings.TrimPrefix(s, Algorithm+":")
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%q is not an Ed25519 public key: want ed25519: and 32 bytes in base64 (the public_key of a signed evidence's signature, or what 'hiro trust' prints)", s)
	}
	return PublicKey(b), nil
}

// Key is the user's signing key.
type Key struct {
	priv ed25519.PrivateKey
	// Path is the key file.
	Path string
}

// Public returns the key's public half.
func (k *Key) Public() PublicKey { return PublicKey(k.priv.Public().(ed25519.PublicKey)) }

// Sign returns the signature of doc, a JSON object (any signature field
// in it is left out of what is signed).
func (k *Key) Sign(doc []byte) (*Signature, error) {
	c, err := Canonical(doc)
	if err != nil {
		return nil, err
	}
	pub := k.Public()
	return &Signature{Algorithm: Algorithm, PublicKey: pub.String(), KeyID: pub.ID(),
		Value: base64.StdEncoding.EncodeToString(ed25519.Sign(k.priv, c))}, nil
}

// Generate returns a new key that is not stored (tests, examples).
func Generate() (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return &Key{priv: priv}, nil
}

// Dir returns the keys folder (private.Keys), created 0700 and checked.
func Dir() (string, error) { return private.Keys.Ensure() }

// LoadOrCreate returns the user's signing key from the keys folder (Dir),
// creating it on first use: a new Ed25519 key written 0600 (a temporary
// file renamed into place, under an exclusive lock of the folder's
// KeyFile+".lock": two hiro starting at once make one key, and no reader
// ever sees a partly written one). A key file another user owns, or that
// its group or others may read or write, is refused, saying what to do:
// hiro never signs with a key someone else could have read or planted.
func LoadOrCreate() (*Key, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, KeyFile)
	if k, err := load(path); !errors.Is(err, os.ErrNotExist) {
		return k, err
	}
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, private.FileMode)
	if err != nil {
		return nil, fmt.Errorf("creating the signing key: %w", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("creating the signing key: %w", err)
	}
	if k, err := load(path); !errors.Is(err, os.ErrNotExist) {
		return k, err
	}
	nk, err := Generate()
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(nk.priv)
	if err != nil {
		return nil, err
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := atomicfile.WriteFile(path, pemBytes, private.FileMode); err != nil {
		return nil, fmt.Errorf("writing the signing key %s: %w", path, err)
	}
	nk.Path = path
	return nk, nil
}

// Load returns the user's signing key, or an error wrapping
// fs.ErrNotExist when this user's hiro has signed nothing yet.
func Load() (*Key, error) {
	d, err := private.Keys.Check()
	if err != nil {
		return nil, err
	}
	return load(filepath.Join(d, KeyFile))
}

func load(path string) (*Key, error) {
	b, err := private.ReadFile(path, checkKeyFile)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("signing key %s is not a PEM private key; move it away and hiro makes a new one (evidence it signed then needs 'hiro trust add' of its public key to be trusted)", path)
	}
	pk, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	priv, ok := pk.(ed25519.PrivateKey)
	if err != nil || !ok {
		return nil, fmt.Errorf("signing key %s is not an Ed25519 key (%v); move it away and hiro makes a new one", path, err)
	}
	return &Key{priv: priv, Path: path}, nil
}

// checkKeyFile refuses a key file another user owns or that anyone but
// its owner may read or write.
func checkKeyFile(path string, fi os.FileInfo) error {
	if err := private.Check(path, fi); err != nil {
		return fmt.Errorf("signing key refused: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("signing key %s is not a regular file (%v); remove it", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("signing key %s has %d hard links: another name could expose it; remove the other links", path, st.Nlink)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("signing key %s may be read by others (mode %v): anyone who read it can sign as you; make a new one (move it away: hiro creates another on its next campaign) or, if no one else could have read it, chmod 600 it", path, perm)
	}
	return nil
}

// Canonical returns the bytes a signature covers: doc, a JSON object,
// without its top-level signature field, encoded as Go's encoding/json
// writes generic values: object keys sorted by their bytes, no
// whitespace, numbers exactly as written in doc, strings with
// encoding/json's escapes and HTML characters unescaped. Re-indenting the
// document or reordering its keys keeps the signature valid; changing any
// value, adding or removing a field does not.
func Canonical(doc []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if d.More() {
		return nil, errors.New("not a JSON object: data after the object")
	}
	delete(m, Field)
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Errors of Verify; each is wrapped with the detail.
var (
	// ErrUnsigned: the document has no signature (written before hiro
	// signed what it writes, or the signature was removed).
	ErrUnsigned = errors.New("unsigned")
	// ErrBadSignature: the signature does not verify against the key the
	// document names: the document was changed after it was signed, or the
	// signature is not one.
	ErrBadSignature = errors.New("the signature does not verify")
)

// Verify checks doc's embedded signature against the public key it
// carries and returns it. It says nothing of whether that key is trusted
// (Trust.Check does). Errors wrap ErrUnsigned or ErrBadSignature.
func Verify(doc []byte) (*Signature, error) {
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(doc, &outer); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := outer[Field]
	if !ok || string(raw) == "null" {
		return nil, fmt.Errorf("%w: no %q field", ErrUnsigned, Field)
	}
	var s Signature
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: the %q field is not a signature (%v)", ErrBadSignature, Field, err)
	}
	if s.Algorithm != Algorithm {
		return &s, fmt.Errorf("%w: algorithm %q, want %q", ErrBadSignature, s.Algorithm, Algorithm)
	}
	pub, err := ParsePublicKey(s.PublicKey)
	if err != nil {
		return &s, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if s.KeyID != pub.ID() {
		return &s, fmt.Errorf("%w: key_id %s is not the fingerprint of the public key it names (%s)", ErrBadSignature, s.KeyID, pub.ID())
	}
	sig, err := base64.StdEncoding.DecodeString(s.Value)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return &s, fmt.Errorf("%w: the value is not a 64-byte Ed25519 signature in base64", ErrBadSignature)
	}
	c, err := Canonical(doc)
	if err != nil {
		return &s, err
	}
	if !ed25519.Verify(ed25519.PublicKey(pub), c, sig) {
		return &s, fmt.Errorf("%w with key %s: the document was changed after it was signed", ErrBadSignature, s.KeyID)
	}
	return &s, nil
}
