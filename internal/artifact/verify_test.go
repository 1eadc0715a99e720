package artifact

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pinTo pins dir and writes the manifest to a file outside it.
func pinTo(t *testing.T, dir string) (string, *Manifest) {
	t.Helper()
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := Write(path, m); err != nil {
		t.Fatal(err)
	}
	return path, m
}

func TestVerifyExactMatch(t *testing.T) {
	dir, files := plainDir(t)
	mpath, m := pinTo(t, dir)
	r, err := Verify(context.Background(), mpath, dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Digest != m.Digest || r.Hashed != len(files) || r.HashedBytes != m.TotalBytes || r.Trusted != 0 || r.Files != len(files) {
		t.Errorf("report = %+v", r)
	}
	if r.Missing == nil || r.Changed == nil || r.Extra == nil || r.Mismatch == nil {
		t.Error("report lists must be empty, not nil")
	}
	// No directory: the manifest's own.
	r, err = Verify(context.Background(), mpath, "", VerifyOptions{})
	if err != nil || !r.OK || r.Dir != dir {
		t.Errorf("verify with the manifest's dir: %v %+v", err, r)
	}
}

func TestVerifyDrift(t *testing.T) {
	const shard = "model-00001-of-00002.safetensors"
	cases := []struct {
		name    string
		change  func(t *testing.T, dir string, files map[string][]byte)
		missing []string
		changed []Change
		extra   []string
	}{
		{
			name:    "missing",
			change:  func(t *testing.T, dir string, _ map[string][]byte) { os.Remove(filepath.Join(dir, "tokenizer.json")) },
			missing: []string{"tokenizer.json"},
		},
		{
			name: "changed size",
			change: func(t *testing.T, dir string, _ map[string][]byte) {
				writeFile(t, dir, "config.json", []byte(`{"architectures":[]}`))
			},
			changed: []Change{{Path: "config.json", Reason: ReasonSize, WantBytes: 40, GotBytes: 20}},
		},
		{
			name: "changed hash same size",
			change: func(t *testing.T, dir string, files map[string][]byte) {
				c := append([]byte(nil), files[shard]...)
				c[len(c)/2] ^= 1
				writeFile(t, dir, shard, c)
			},
			changed: []Change{{Path: shard, Reason: ReasonSHA256}}, // sizes and hashes filled below
		},
		{
			name: "extra",
			change: func(t *testing.T, dir string, _ map[string][]byte) {
				writeFile(t, dir, "templates/new.jinja", []byte("x"))
			},
			extra: []string{"templates/new.jinja"},
		},
		{
			name: "all three",
			change: func(t *testing.T, dir string, _ map[string][]byte) {
				os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
				writeFile(t, dir, "tokenizer.json", []byte(`{"version":"2.0"}`))
				writeFile(t, dir, "model-00003-of-00003.safetensors", []byte("stray"))
				writeFile(t, dir, "README.md", []byte("readme"))
			},
			missing: []string{"model-00002-of-00002.safetensors"},
			changed: []Change{{Path: "tokenizer.json", Reason: ReasonSHA256}},
			extra:   []string{"README.md", "model-00003-of-00003.safetensors"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, files := plainDir(t)
			mpath, m := pinTo(t, dir)
			c.change(t, dir, files)
			want := map[string]File{}
			for _, f := range m.Files {
				want[f.Path] = f
			}
			for i, ch := range c.changed {
				if ch.Reason == ReasonSHA256 {
					got, _ := os.ReadFile(filepath.Join(dir, ch.Path))
					c.changed[i].WantBytes, c.changed[i].GotBytes = want[ch.Path].Bytes, int64(len(got))
					c.changed[i].WantSHA256, c.changed[i].GotSHA256 = want[ch.Path].SHA256, sha(got)
				}
			}
			for _, fast := range []bool{false, true} {
				r, err := Verify(context.Background(), mpath, dir, VerifyOptions{Fast: fast})
				if err != nil {
					t.Fatal(err)
				}
				if r.OK {
					t.Errorf("fast=%v: drift reported OK", fast)
				}
				if !reflect.DeepEqual(r.Missing, nonNil(c.missing)) {
					t.Errorf("fast=%v: missing = %v, want %v", fast, r.Missing, c.missing)
				}
				if !reflect.DeepEqual(r.Changed, nonNilC(c.changed)) {
					t.Errorf("fast=%v: changed = %+v, want %+v", fast, r.Changed, c.changed)
				}
				if !reflect.DeepEqual(r.Extra, nonNil(c.extra)) {
					t.Errorf("fast=%v: extra = %v, want %v", fast, r.Extra, c.extra)
				}
			}
		})
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilC(s []Change) []Change {
	if s == nil {
		return []Change{}
	}
	return s
}

func TestVerifyFastTrustsSizeAndMtimeOnlyWhenAsked(t *testing.T) {
	dir, files := plainDir(t)
	mpath, _ := pinTo(t, dir)
	const shard = "model-00001-of-00002.safetensors"
	p := filepath.Join(dir, shard)

	// Fast with nothing touched reads nothing.
	r, err := Verify(context.Background(), mpath, dir, VerifyOptions{Fast: true})
	if err != nil || !r.OK || r.Hashed != 0 || r.Trusted != len(files) {
		t.Fatalf("fast on an untouched dir: %v %+v", err, r)
	}

	// Touching a file (same content, new mtime) is not drift; fast hashes it.
	later := time.Now().Add(time.Hour)
	os.Chtimes(p, later, later)
	r, err = Verify(context.Background(), mpath, dir, VerifyOptions{Fast: true})
	if err != nil || !r.OK || r.Hashed != 1 || r.Trusted != len(files)-1 {
		t.Fatalf("fast after touch: %v %+v", err, r)
	}

	// Same-size edit with the pinned mtime put back (as a tool that
	// preserves mtimes would): the default full hash catches it; fast
	// trusts it, which is its documented limit.
	m, err := Load(mpath)
	if err != nil {
		t.Fatal(err)
	}
	var pinned time.Time
	for _, f := range m.Files {
		if f.Path == shard {
			pinned = f.MTime
		}
	}
	c := append([]byte(nil), files[shard]...)
	c[0] ^= 1
	os.WriteFile(p, c, 0o644)
	os.Chtimes(p, pinned, pinned)
	if r, err = Verify(context.Background(), mpath, dir, VerifyOptions{}); err != nil || r.OK || len(r.Changed) != 1 || r.Changed[0].Reason != ReasonSHA256 {
		t.Errorf("full verify after a same-size edit: %v %+v", err, r)
	}
	if r, err = Verify(context.Background(), mpath, dir, VerifyOptions{Fast: true}); err != nil || !r.OK || r.Hashed != 0 {
		t.Errorf("fast verify did not trust size+mtime: %v %+v", err, r)
	}
}

func TestVerifyFileChangedWhileHashed(t *testing.T) {
	dir, _ := plainDir(t)
	mpath, _ := pinTo(t, dir)
	opts := VerifyOptions{beforeHash: func(rel string) {
		if rel == "config.json" {
			writeFile(t, dir, rel, []byte(`{"architectures":["changed while hashed"]}`))
		}
	}}
	r, err := Verify(context.Background(), mpath, dir, opts)
	if !errors.Is(err, ErrChanged) || r != nil {
		t.Fatalf("err = %v, report %v; want ErrChanged and no report", err, r)
	}
}

func TestVerifyIgnoresManifestInsideDir(t *testing.T) {
	dir, _ := plainDir(t)
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(dir, "hiro-manifest.json")
	if err := Write(mpath, m); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(context.Background(), mpath, dir, VerifyOptions{})
	if err != nil || !r.OK {
		t.Fatalf("manifest inside the dir counted as extra: %v %+v", err, r)
	}
}

func TestVerifyBadInput(t *testing.T) {
	dir, _ := plainDir(t)
	mpath, _ := pinTo(t, dir)
	if _, err := Verify(context.Background(), mpath, filepath.Join(dir, "nope"), VerifyOptions{}); !errors.Is(err, ErrDir) {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := Verify(context.Background(), filepath.Join(dir, "nope.json"), dir, VerifyOptions{}); !errors.Is(err, ErrManifest) {
		t.Errorf("missing manifest: %v", err)
	}
	os.Symlink("loop", filepath.Join(dir, "loop"))
	if _, err := Verify(context.Background(), mpath, dir, VerifyOptions{}); !errors.Is(err, ErrSymlinkLoop) {
		t.Errorf("symlink loop: %v", err)
	}
}

func TestSummary(t *testing.T) {
	r := &Report{OK: true, Files: 4, Bytes: 15 << 30, Repo: testRepo, Revision: testRev, Digest: "sha256:ab", Dir: "/models/tiny model/"}
	// The folder verified is named (quoted as a shell word).
	if got := r.Summary(); got != "artifact ok in '/models/tiny model': 4 files, 15.0 GiB, acme/tiny-model@"+testRev+", sha256:ab" {
		t.Errorf("summary = %q", got)
	}
	r = &Report{Dir: "/m", Missing: []string{"a"}, Changed: []Change{{}, {}}, Extra: []string{}}
	if got := r.Summary(); got != "artifact drift in /m: 1 missing, 2 changed, 0 extra" {
		t.Errorf("summary = %q", got)
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 40: "5.0 TiB", 2048 << 40: "2048.0 TiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A manifest path with no file is "not found", not a bad manifest, and is
// still bad input (ErrManifest) and a missing file (fs.ErrNotExist).
func TestMissingManifestIsNotFound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "manifest.json")
	_, err := Load(p)
	if err == nil || !errors.Is(err, ErrManifest) || !errors.Is(err, fs.ErrNotExist) ||
		!strings.Contains(err.Error(), "manifest "+p+" not found") || strings.Contains(err.Error(), "bad manifest") {
		t.Errorf("Load of a missing manifest: %v", err)
	}
}

// TestVerifyIgnoresACopiedManifest: a byte-identical copy of the manifest
// being verified, kept as manifest.json beside the weights, is not an
// extra file (it was reported as one: drift, exit 1); a manifest.json
// with other bytes still is.
func TestVerifyIgnoresACopiedManifest(t *testing.T) {
	dir, _ := plainDir(t)
	mpath, _ := pinTo(t, dir)
	b, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	copied := writeFile(t, dir, "manifest.json", b)
	r, err := Verify(context.Background(), mpath, dir, VerifyOptions{})
	if err != nil || !r.OK || len(r.Extra) != 0 {
		t.Fatalf("a copy of the manifest counted as extra: %v %+v", err, r)
	}
	// Another manifest under that name (one more byte) is extra.
	writeFile(t, dir, "manifest.json", append(b, '\n'))
	r, err = Verify(context.Background(), mpath, dir, VerifyOptions{})
	if err != nil || r.OK || len(r.Extra) != 1 || r.Extra[0] != "manifest.json" {
		t.Fatalf("a different manifest.json (%s) not reported as extra: %v %+v", copied, err, r)
	}
}
