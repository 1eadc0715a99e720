package artifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPinPlainRecordsEveryFile(t *testing.T) {
	dir, files := plainDir(t)
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{Now: func() time.Time { return created }})
	if err != nil {
		t.Fatal(err)
	}
	if m.Schema != SchemaID || m.Repo != testRepo || m.Revision != testRev || !m.Created.Equal(created) || m.Layout != LayoutPlain || m.Dir != dir {
		t.Errorf("header = %q %q %q %v %q %q", m.Schema, m.Repo, m.Revision, m.Created, m.Layout, m.Dir)
	}
	var want []string
	for rel := range files {
		want = append(want, rel)
	}
	sort.Strings(want)
	if len(m.Files) != len(want) {
		t.Fatalf("got %d files, want %d", len(m.Files), len(want))
	}
	var total int64
	for i, f := range m.Files {
		if f.Path != want[i] {
			t.Errorf("files[%d].path = %q, want %q", i, f.Path, want[i])
		}
		c := files[f.Path]
		if f.Bytes != int64(len(c)) || f.SHA256 != sha(c) {
			t.Errorf("%s: bytes %d sha %s, want %d %s", f.Path, f.Bytes, f.SHA256, len(c), sha(c))
		}
		fi, _ := os.Stat(filepath.Join(dir, f.Path))
		if !f.MTime.Equal(fi.ModTime()) {
			t.Errorf("%s: mtime %v, want %v", f.Path, f.MTime, fi.ModTime())
		}
		total += f.Bytes
	}
	if m.TotalBytes != total {
		t.Errorf("total_bytes = %d, want %d", m.TotalBytes, total)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("pinned manifest does not validate: %v", err)
	}
	// One worker gives the same result as NumCPU workers.
	m1, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m1.Digest != m.Digest {
		t.Errorf("digest with 1 worker %s != %s", m1.Digest, m.Digest)
	}
}

func TestPinRefusesMovingRevision(t *testing.T) {
	dir, _ := plainDir(t)
	for _, rev := range []string{"main", "v1.0", "refs/pr/3", "49ec31e", strings.ToUpper(testRev), ""} {
		_, err := Pin(context.Background(), dir, testRepo, rev, PinOptions{})
		if !errors.Is(err, ErrRevision) {
			t.Errorf("revision %q: err = %v, want ErrRevision", rev, err)
		}
	}
	_, err := Pin(context.Background(), dir, testRepo, "main", PinOptions{})
	if err == nil || !strings.Contains(err.Error(), "branch or tag") || !strings.Contains(err.Error(), "40-hex") {
		t.Errorf("message for main does not explain: %v", err)
	}
	if _, err := Pin(context.Background(), dir, "not a repo", testRev, PinOptions{}); !errors.Is(err, ErrRepo) {
		t.Errorf("bad repo: err = %v, want ErrRepo", err)
	}
}

func TestPinBadInput(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(t *testing.T) string // returns the directory to pin
		want  error
		msg   string
	}{
		{"missing dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, ErrDir, "does not exist"},
		{"not a dir", func(t *testing.T) string { return writeFile(t, t.TempDir(), "f", []byte("x")) }, ErrDir, "not a directory"},
		{"empty dir", func(t *testing.T) string { return t.TempDir() }, ErrDir, "no files"},
		{"symlink loop", func(t *testing.T) string {
			dir, _ := plainDir(t)
			os.Symlink("b.safetensors", filepath.Join(dir, "a.safetensors"))
			os.Symlink("a.safetensors", filepath.Join(dir, "b.safetensors"))
			return dir
		}, ErrSymlinkLoop, "a.safetensors"},
		{"symlink escape", func(t *testing.T) string {
			outside := writeFile(t, t.TempDir(), "secret.bin", []byte("outside"))
			dir, _ := plainDir(t)
			os.Symlink(outside, filepath.Join(dir, "extra.bin"))
			return dir
		}, ErrSymlinkEscape, "outside the artifact directory"},
		{"relative escape", func(t *testing.T) string {
			parent := t.TempDir()
			writeFile(t, parent, "secret.bin", []byte("outside"))
			dir := filepath.Join(parent, "model")
			writeFile(t, dir, "config.json", []byte("{}"))
			os.Symlink("../secret.bin", filepath.Join(dir, "extra.bin"))
			return dir
		}, ErrSymlinkEscape, "extra.bin"},
		{"broken symlink", func(t *testing.T) string {
			dir, _ := plainDir(t)
			os.Symlink("gone.bin", filepath.Join(dir, "dangling.bin"))
			return dir
		}, ErrBrokenSymlink, "dangling.bin"},
		{"symlink to directory", func(t *testing.T) string {
			dir, _ := plainDir(t)
			os.Symlink("templates", filepath.Join(dir, "tpl"))
			return dir
		}, ErrNotRegular, "tpl"},
		{"fifo", func(t *testing.T) string {
			dir, _ := plainDir(t)
			if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
			return dir
		}, ErrNotRegular, "pipe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Pin(ctx, c.setup(t), testRepo, testRev, PinOptions{})
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if m != nil {
				t.Error("a manifest was returned with the error")
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q does not mention %q", err, c.msg)
			}
		})
	}
}

func TestPinUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: file permissions do not stop reads")
	}
	dir, _ := plainDir(t)
	p := filepath.Join(dir, "config.json")
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "config.json") || !strings.Contains(err.Error(), "permission") {
		t.Fatalf("err = %v, want ErrUnreadable naming config.json and permissions", err)
	}
}

func TestPinFollowsInternalSymlinks(t *testing.T) {
	dir, files := plainDir(t)
	if err := os.Symlink("templates/chat_template.jinja", filepath.Join(dir, "chat_template.jinja")); err != nil {
		t.Fatal(err)
	}
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range m.Files {
		if f.Path == "chat_template.jinja" {
			found = true
			if f.SHA256 != sha(files["templates/chat_template.jinja"]) {
				t.Errorf("symlink hashed as %s, want the target's hash", f.SHA256)
			}
		}
	}
	if !found {
		t.Error("symlink inside the directory was not pinned")
	}
}

func TestPinFileChangedWhileHashed(t *testing.T) {
	cases := map[string]func(t *testing.T, p string){
		"appended": func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("more bytes"))
			f.Close()
		},
		"rewritten same size": func(t *testing.T, p string) {
			c, _ := os.ReadFile(p)
			c[0] ^= 0xff
			os.WriteFile(p, c, 0o644)
			later := time.Now().Add(time.Hour)
			os.Chtimes(p, later, later)
		},
		"replaced": func(t *testing.T, p string) {
			c, _ := os.ReadFile(p)
			tmp := p + ".new"
			os.WriteFile(tmp, c, 0o644)
			fi, _ := os.Stat(p)
			os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := plainDir(t)
			const victim = "model-00001-of-00002.safetensors"
			calls := 0
			opts := PinOptions{beforeHash: func(rel string) {
				if rel == victim {
					calls++
					change(t, filepath.Join(dir, victim))
				}
			}}
			m, err := Pin(context.Background(), dir, testRepo, testRev, opts)
			if calls != 1 {
				t.Fatalf("hook called %d times for %s", calls, victim)
			}
			if !errors.Is(err, ErrChanged) || m != nil {
				t.Fatalf("err = %v (manifest %v), want ErrChanged", err, m != nil)
			}
			if !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "run again") {
				t.Errorf("message does not name the file and the remedy: %v", err)
			}
		})
	}
}

func TestPinCancelled(t *testing.T) {
	dir, _ := plainDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Pin(ctx, dir, testRepo, testRev, PinOptions{Workers: 1, beforeHash: func(string) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestPinExclude(t *testing.T) {
	dir, _ := plainDir(t)
	out := writeFile(t, dir, "manifest.json", []byte("{}"))
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{Exclude: []string{out}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		if f.Path == "manifest.json" {
			t.Error("excluded manifest.json was pinned")
		}
	}
}

type countingProgress struct {
	total, added int64
	files        int
	started      int
	finished     int
}

func (p *countingProgress) Start(total int64, files int) {
	p.total, p.files = total, files
	p.started++
}
func (p *countingProgress) Add(n int64) { p.added += n } // Workers: 1 below
func (p *countingProgress) Finish()     { p.finished++ }

func TestPinReportsProgress(t *testing.T) {
	dir, _ := plainDir(t)
	p := &countingProgress{}
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{Workers: 1, Progress: p})
	if err != nil {
		t.Fatal(err)
	}
	if p.started != 1 || p.finished != 1 || p.total != m.TotalBytes || p.added != m.TotalBytes || p.files != len(m.Files) {
		t.Errorf("progress = %+v, want total=added=%d files=%d", p, m.TotalBytes, len(m.Files))
	}
	if TerminalProgress(&strings.Builder{}, "x") != nil {
		t.Error("TerminalProgress on a non-terminal writer must be nil")
	}
	f, _ := os.Create(filepath.Join(t.TempDir(), "log"))
	defer f.Close()
	if TerminalProgress(f, "x") != nil {
		t.Error("TerminalProgress on a regular file must be nil")
	}
}

func TestPinDirThroughSymlink(t *testing.T) {
	dir, _ := plainDir(t)
	want, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "model-link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(link, "manifest.json") // excluded through the link
	writeFile(t, dir, "manifest.json", []byte("{}"))
	got, err := Pin(context.Background(), link, testRepo, testRev, PinOptions{Exclude: []string{out}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want.Digest || got.Dir != link {
		t.Errorf("through a symlink: digest %s dir %s, want %s %s", got.Digest, got.Dir, want.Digest, link)
	}
}
