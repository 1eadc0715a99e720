package private

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// isolate clears every variable the state home is read from.
func isolate(t *testing.T) {
	for _, v := range []string{StateHomeEnv, "HIRO_LEASE_DIR", "HIRO_PRODUCTION_DIR", "HIRO_KEY_DIR", "XDG_STATE_HOME"} {
		t.Setenv(v, "")
	}
}

var allFolders = []Folder{Leases, Production, Control, Keys}

// With HOME unset (a service unit) no folder falls back to the shared
// temporary folder: each is the password database's home or an error
// naming the variable to set.
func TestNoSharedFallbackWithoutHome(t *testing.T) {
	isolate(t)
	t.Setenv("HOME", "")
	t.Setenv("TMPDIR", "")
	for _, f := range allFolders {
		d, err := f.Path()
		if err != nil {
			if !errors.Is(err, ErrNoStateHome) || !strings.Contains(err.Error(), StateHomeEnv) {
				t.Errorf("%s: error does not name the variable to set: %v", f.What, err)
			}
			continue
		}
		if !filepath.IsAbs(d) || strings.HasPrefix(d, os.TempDir()) || strings.HasPrefix(d, "/tmp") || strings.HasPrefix(d, "/var/tmp") {
			t.Errorf("%s with HOME unset is %s: a shared folder", f.What, d)
		}
	}
}

// Every folder but the leases follows HIRO_STATE_HOME; the leases folder's
// own variable names it alone, and under HIRO_LEASE_DIR (tests and
// trials) the others go beside the leases.
func TestFolderResolution(t *testing.T) {
	isolate(t)
	home := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv(StateHomeEnv, home)
	for _, f := range allFolders {
		if f.Machine {
			continue
		}
		d, err := f.Path()
		if err != nil || d != filepath.Join(home, f.Sub) {
			t.Errorf("%s under %s = %s, %v; want %s", f.What, StateHomeEnv, d, err, filepath.Join(home, f.Sub))
		}
	}
	isolate(t)
	t.Setenv("HIRO_LEASE_DIR", home)
	if d, _ := Leases.Path(); d != home {
		t.Errorf("leases under HIRO_LEASE_DIR = %s, want %s", d, home)
	}
	if d, _ := Production.Path(); d != filepath.Join(home, "production") {
		t.Errorf("production under HIRO_LEASE_DIR = %s", d)
	}
	isolate(t)
	t.Setenv("XDG_STATE_HOME", "relative/path")
	t.Setenv("HOME", home)
	if d, _ := Control.Path(); d != filepath.Join(home, ".local", "state", "hiro", "serve") {
		t.Errorf("a relative XDG_STATE_HOME (invalid per XDG) was used: %s", d)
	}
}

// The leases are of what the machine has once (a port, the accelerator):
// runs under two state homes find the same lease folder, which only
// HIRO_LEASE_DIR moves (issue 26 F6: each state home had its own and two
// runs of one configuration both acted on production).
func TestLeasesAreOneFolderWhateverTheStateHome(t *testing.T) {
	isolate(t)
	user := t.TempDir()
	t.Setenv("HOME", user)
	want := filepath.Join(user, ".local", "state", "hiro", "leases")
	for _, env := range [][2]string{{StateHomeEnv, ""}, {StateHomeEnv, t.TempDir()}, {StateHomeEnv, t.TempDir()}, {"XDG_STATE_HOME", t.TempDir()}} {
		t.Setenv(env[0], env[1])
		if d, err := Leases.Path(); err != nil || d != want {
			t.Errorf("leases with %s=%q: %s, %v; want %s", env[0], env[1], d, err, want)
		}
	}
	if d, _ := Production.Path(); d == filepath.Join(user, ".local", "state", "hiro", "production") {
		t.Errorf("the production records stopped following the state home: %s", d)
	}
	own := t.TempDir()
	t.Setenv("HIRO_LEASE_DIR", own)
	if d, _ := Leases.Path(); d != own {
		t.Errorf("HIRO_LEASE_DIR=%s gives %s", own, d)
	}
	// Without a home the error names the one variable that moves them.
	t.Setenv("HIRO_LEASE_DIR", "")
	t.Setenv("HOME", "relative")
	if _, err := Leases.Path(); err == nil || !strings.Contains(err.Error(), "set HIRO_LEASE_DIR") {
		t.Errorf("no home: %v; want an error naming HIRO_LEASE_DIR", err)
	}
}

func TestEnsureCreatesOwnerOnly(t *testing.T) {
	isolate(t)
	home := filepath.Join(t.TempDir(), "state")
	t.Setenv(StateHomeEnv, home)
	t.Setenv("HOME", t.TempDir()) // the leases are under the user's home
	for _, f := range allFolders {
		d, err := f.Ensure()
		if err != nil {
			t.Fatalf("%s: %v", f.What, err)
		}
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != DirMode {
			t.Errorf("%s %s: mode %v (%v), want 0700", f.What, d, fi.Mode().Perm(), err)
		}
	}
	// A folder of the user's that others may only read is narrowed.
	d := filepath.Join(t.TempDir(), "readable")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EnsureDir(d, "test folder"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(d); fi.Mode().Perm() != DirMode {
		t.Errorf("a 0755 folder of the user's was left %v", fi.Mode().Perm())
	}
}

// A state folder owned by another user, one its group or others may write
// and a symbolic link are refused, each saying which folder, why and what
// to do; the folder is left as it was.
func TestEnsureRefusesFoldersThatAreNotPrivate(t *testing.T) {
	isolate(t)
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		make func(d string)
		want []string
	}{
		{"owned by nobody", func(d string) {
			must(t, os.Mkdir(d, 0o700))
			testsupport.GiveToNobody(t, d)
		}, []string{"owned by uid 65534", "not by you", "HIRO_LEASE_DIR"}},
		{"group-writable", func(d string) {
			must(t, os.Mkdir(d, 0o700))
			must(t, os.Chmod(d, 0o770))
		}, []string{"written by its group or others", "chmod 700", "HIRO_LEASE_DIR"}},
		{"world-writable sticky", func(d string) {
			must(t, os.Mkdir(d, 0o700))
			must(t, os.Chmod(d, 0o777|os.ModeSticky))
		}, []string{"written by its group or others"}},
		{"symbolic link", func(d string) {
			must(t, os.Symlink(real, d))
		}, []string{"symbolic link", "HIRO_LEASE_DIR"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := filepath.Join(base, "leases"+string(rune('a'+i)))
			c.make(d)
			before, _ := os.Lstat(d)
			t.Setenv("HIRO_LEASE_DIR", d)
			_, err := Leases.Ensure()
			if err == nil {
				t.Fatalf("%s lease folder accepted", c.name)
			}
			for _, w := range append(c.want, d, "lease folder") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			after, _ := os.Lstat(d)
			if before.Mode() != after.Mode() {
				t.Errorf("the refused folder's mode changed: %v -> %v", before.Mode(), after.Mode())
			}
			if _, err := Leases.Check(); err == nil {
				t.Errorf("Check accepted what Ensure refused")
			}
		})
	}
}

// A socket made by another user is refused before a client talks to it;
// one made by this user in a private folder passes.
func TestCheckSocketOwner(t *testing.T) {
	d := filepath.Join(t.TempDir(), "serve")
	must(t, EnsureDir(d, "control socket folder"))
	path := filepath.Join(d, "control.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := CheckSocket(path, "control socket"); err != nil {
		t.Fatalf("own socket refused: %v", err)
	}
	testsupport.GiveToNobody(t, path)
	err = CheckSocket(path, "control socket")
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") || !strings.Contains(err.Error(), path) {
		t.Fatalf("another user's socket: %v", err)
	}
	if err := CheckSocket(filepath.Join(d, "missing.sock"), "control socket"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing socket: %v, want fs.ErrNotExist", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
