package artifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPinHFCache(t *testing.T) {
	repoDir, snapDir, files := hfCache(t)
	ctx := context.Background()
	m, err := Pin(ctx, snapDir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Layout != LayoutHFCache || m.Dir != snapDir || len(m.Files) != len(files) {
		t.Fatalf("layout %q dir %q files %d", m.Layout, m.Dir, len(m.Files))
	}
	for _, f := range m.Files {
		c, ok := files[f.Path]
		if !ok {
			t.Errorf("unexpected path %q (the link name, not the blob, must be recorded)", f.Path)
			continue
		}
		if f.SHA256 != sha(c) || f.Bytes != int64(len(c)) {
			t.Errorf("%s: %d %s, want %d %s", f.Path, f.Bytes, f.SHA256, len(c), sha(c))
		}
	}
	// The same content in a plain directory pins to the same digest.
	plain, _ := plainDir(t)
	pm, err := Pin(ctx, plain, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pm.Digest != m.Digest {
		t.Errorf("plain digest %s != cache digest %s", pm.Digest, m.Digest)
	}
	// The repository cache directory resolves to snapshots/<revision>.
	rm, err := Pin(ctx, repoDir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rm.Digest != m.Digest || rm.Dir != snapDir {
		t.Errorf("pin of the repo cache dir: digest %s dir %s", rm.Digest, rm.Dir)
	}
}

func TestPinHFCacheIdentity(t *testing.T) {
	repoDir, snapDir, _ := hfCache(t)
	ctx := context.Background()
	_, err := Pin(ctx, snapDir, testRepo, otherRev, PinOptions{})
	if !errors.Is(err, ErrRevision) || !strings.Contains(err.Error(), testRev) {
		t.Errorf("snapshot of another revision: %v", err)
	}
	if _, err := Pin(ctx, snapDir, "acme/other-model", testRev, PinOptions{}); !errors.Is(err, ErrRepo) {
		t.Errorf("cache of another repo: %v", err)
	}
	_, err = Pin(ctx, repoDir, testRepo, otherRev, PinOptions{})
	if !errors.Is(err, ErrDir) || !strings.Contains(err.Error(), testRev) {
		t.Errorf("repo dir without that snapshot: %v (must list the snapshots present)", err)
	}
}

func TestPinHFCacheBlobNameMismatch(t *testing.T) {
	_, snapDir, files := hfCache(t)
	const shard = "model-00001-of-00002.safetensors"
	blob := filepath.Join(filepath.Dir(filepath.Dir(snapDir)), "blobs", sha(files[shard]))
	c := append([]byte(nil), files[shard]...)
	c[100] ^= 1 // same size, content no longer matches the blob's name
	if err := os.WriteFile(blob, c, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Pin(context.Background(), snapDir, testRepo, testRev, PinOptions{})
	if !errors.Is(err, ErrBlobMismatch) || !strings.Contains(err.Error(), shard) || !strings.Contains(err.Error(), sha(c)) {
		t.Fatalf("err = %v, want ErrBlobMismatch naming the link and the actual hash", err)
	}
}

func TestPinHFCacheSymlinks(t *testing.T) {
	ctx := context.Background()
	t.Run("link into another snapshot stays in the cache", func(t *testing.T) {
		repoDir, snapDir, files := hfCache(t)
		other := filepath.Join(repoDir, "snapshots", otherRev)
		writeFile(t, other, "generation_config.json", []byte(`{"temperature":0.15}`))
		if err := os.Symlink("../"+otherRev+"/generation_config.json", filepath.Join(snapDir, "generation_config.json")); err != nil {
			t.Fatal(err)
		}
		m, err := Pin(ctx, snapDir, testRepo, testRev, PinOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Files) != len(files)+1 {
			t.Errorf("got %d files, want %d", len(m.Files), len(files)+1)
		}
	})
	t.Run("link out of the cache", func(t *testing.T) {
		repoDir, snapDir, _ := hfCache(t)
		// A sibling repository in the same hub is still outside this one.
		outside := writeFile(t, filepath.Join(filepath.Dir(repoDir), "models--acme--other", "blobs"), "x", []byte("x"))
		os.Symlink(outside, filepath.Join(snapDir, "stray.bin"))
		_, err := Pin(ctx, snapDir, testRepo, testRev, PinOptions{})
		if !errors.Is(err, ErrSymlinkEscape) || !strings.Contains(err.Error(), "repository cache directory") {
			t.Fatalf("err = %v, want ErrSymlinkEscape", err)
		}
	})
	t.Run("loop", func(t *testing.T) {
		repoDir, snapDir, _ := hfCache(t)
		blobs := filepath.Join(repoDir, "blobs")
		os.Symlink("loop-b", filepath.Join(blobs, "loop-a"))
		os.Symlink("loop-a", filepath.Join(blobs, "loop-b"))
		os.Symlink("../../blobs/loop-a", filepath.Join(snapDir, "looped.bin"))
		_, err := Pin(ctx, snapDir, testRepo, testRev, PinOptions{})
		if !errors.Is(err, ErrSymlinkLoop) || !strings.Contains(err.Error(), "looped.bin") {
			t.Fatalf("err = %v, want ErrSymlinkLoop", err)
		}
	})
}

func TestVerifyHFCache(t *testing.T) {
	ctx := context.Background()
	t.Run("match, by snapshot or repo dir", func(t *testing.T) {
		repoDir, snapDir, _ := hfCache(t)
		mpath, m := pinTo(t, snapDir)
		for _, dir := range []string{snapDir, repoDir} {
			r, err := Verify(ctx, mpath, dir, VerifyOptions{})
			if err != nil || !r.OK || r.Layout != LayoutHFCache || r.Digest != m.Digest {
				t.Errorf("verify %s: %v %+v", dir, err, r)
			}
		}
	})
	t.Run("drift", func(t *testing.T) {
		repoDir, snapDir, _ := hfCache(t)
		mpath, _ := pinTo(t, snapDir)
		os.Remove(filepath.Join(snapDir, "tokenizer.json"))         // missing
		writeFile(t, repoDir, "blobs/newconfig", []byte(`{"a":1}`)) // relink config.json
		os.Remove(filepath.Join(snapDir, "config.json"))            // to other content
		os.Symlink("../../blobs/newconfig", filepath.Join(snapDir, "config.json"))
		os.Symlink("../../blobs/newconfig", filepath.Join(snapDir, "extra.json")) // extra
		r, err := Verify(ctx, mpath, snapDir, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK || len(r.Missing) != 1 || r.Missing[0] != "tokenizer.json" ||
			len(r.Changed) != 1 || r.Changed[0].Path != "config.json" || r.Changed[0].Reason != ReasonSize ||
			len(r.Extra) != 1 || r.Extra[0] != "extra.json" {
			t.Errorf("report = %+v", r)
		}
	})
	t.Run("corrupt blob: manifest and blob name both disagree", func(t *testing.T) {
		repoDir, snapDir, files := hfCache(t)
		mpath, _ := pinTo(t, snapDir)
		const shard = "model-00001-of-00002.safetensors"
		c := append([]byte(nil), files[shard]...)
		c[7] ^= 1
		os.WriteFile(filepath.Join(repoDir, "blobs", sha(files[shard])), c, 0o644)
		r, err := Verify(ctx, mpath, snapDir, VerifyOptions{})
		if err != nil || r.OK || len(r.Changed) != 1 || r.Changed[0].Reason != ReasonSHA256 || r.Changed[0].GotSHA256 != sha(c) {
			t.Errorf("%v %+v", err, r)
		}
	})
	t.Run("blob name disagrees with content the manifest agrees with", func(t *testing.T) {
		// A manifest pinned from a good copy; the cache's blob is named for
		// another hash (a mis-named blob): Verify must not pass it.
		plain, files := plainDir(t)
		mpath, _ := pinTo(t, plain)
		repoDir, snapDir, _ := hfCache(t)
		const shard = "model-00001-of-00002.safetensors"
		good := filepath.Join(repoDir, "blobs", sha(files[shard]))
		wrongName := filepath.Join(repoDir, "blobs", strings.Repeat("ab", 32))
		os.Rename(good, wrongName)
		link := filepath.Join(snapDir, shard)
		os.Remove(link)
		os.Symlink("../../blobs/"+filepath.Base(wrongName), link)
		r, err := Verify(ctx, mpath, snapDir, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := Change{Path: shard, Reason: ReasonBlobName, WantBytes: int64(len(files[shard])), GotBytes: int64(len(files[shard])), WantSHA256: sha(files[shard]), GotSHA256: strings.Repeat("ab", 32)}
		if r.OK || len(r.Changed) != 1 || r.Changed[0] != want {
			t.Errorf("changed = %+v, want %+v", r.Changed, want)
		}
	})
	t.Run("snapshot of another revision", func(t *testing.T) {
		repoDir, snapDir, _ := hfCache(t)
		mpath, _ := pinTo(t, snapDir)
		moved := filepath.Join(repoDir, "snapshots", otherRev)
		if err := os.Rename(snapDir, moved); err != nil {
			t.Fatal(err)
		}
		r, err := Verify(ctx, mpath, moved, VerifyOptions{})
		if err != nil || r.OK || len(r.Mismatch) != 1 || !strings.Contains(r.Mismatch[0], otherRev) {
			t.Errorf("%v %+v", err, r)
		}
	})
}

func TestPinHFCacheThroughSymlink(t *testing.T) {
	_, snapDir, _ := hfCache(t)
	link := filepath.Join(t.TempDir(), "current-model")
	if err := os.Symlink(snapDir, link); err != nil {
		t.Fatal(err)
	}
	m, err := Pin(context.Background(), link, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatalf("a symlink to a snapshot must be read as the cache layout: %v", err)
	}
	if m.Layout != LayoutHFCache || m.Dir != link {
		t.Errorf("layout %q dir %q", m.Layout, m.Dir)
	}
}
