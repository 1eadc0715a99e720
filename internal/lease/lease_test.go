package lease

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/private"
)

func TestDirNeverFallsBackToTmp(t *testing.T) {
	t.Setenv("HIRO_LEASE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	t.Setenv("HIRO_STATE_HOME", "")
	d, err := private.Leases.Path()
	if err == nil && (strings.HasPrefix(d, os.TempDir()) || !filepath.IsAbs(d)) {
		t.Fatalf("with HOME unset the lease folder is %s: a predictable shared folder", d)
	}
	if err != nil && !strings.Contains(err.Error(), "HIRO_LEASE_DIR") {
		t.Fatalf("error does not say what to do: %v", err)
	}
}

func TestDirIsPrivate(t *testing.T) {
	base := t.TempDir()
	d := filepath.Join(base, "leases")
	must(t, os.MkdirAll(d, 0o755))
	t.Setenv("HIRO_LEASE_DIR", d)
	got, err := Dir()
	must(t, err)
	fi, err := os.Stat(got)
	must(t, err)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("lease folder mode %v, want 0700", fi.Mode().Perm())
	}
}

func TestAcquireIsExclusiveAndReleased(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "leases")
	key := ProductionKey("http://localhost:8080")
	if key != ProductionKey("http://127.0.0.1:8080/") {
		t.Fatalf("one server, two keys: %s", key)
	}
	h, err := Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "c1"}, key, AcceleratorKey)
	must(t, err)
	// Another holder (flock locks belong to the open file: a second open
	// in this process conflicts like another process would).
	_, err = Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "c2"}, key)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder == nil || held.Holder.Campaign != "c1" || !strings.Contains(err.Error(), "campaign c1") {
		t.Fatalf("second acquire: %v", err)
	}
	fi, err := os.Stat(fileName(dir, key))
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("lease file mode %v, want 0600", fi.Mode().Perm())
	}
	must(t, h.Release())
	if m, _ := filepath.Glob(filepath.Join(dir, "*.lease")); len(m) != 0 {
		t.Errorf("files left after release: %v", m)
	}
	h2, err := Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "c2"}, key)
	must(t, err)
	h2.Abandon()
	// Abandoned with a campaign record: recovery's, not a new holder's.
	if _, err := Acquire(dir, &Lease{Kind: KindCommand, Command: "x"}, key); err == nil || !strings.Contains(err.Error(), "recover") {
		t.Fatalf("acquire over a dead campaign's lease: %v", err)
	}
	dead, _, err := Scan(dir)
	must(t, err)
	if len(dead) != 1 || dead[0].Campaign != "c2" {
		t.Fatalf("scan: %+v", dead)
	}
	h3, err := Claim(dead[0])
	must(t, err)
	if h3.Lease().RecoveredFrom == nil {
		t.Error("claim does not record whom it took over from")
	}
	must(t, h3.Release())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSharedAcceleratorBesideExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "leases")
	s1, err := AcquireShared(dir, AcceleratorKey)
	must(t, err)
	s2, err := AcquireShared(dir, AcceleratorKey)
	must(t, err) // two non-exclusive users at once
	if _, err := Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "x"}, AcceleratorKey); !errors.Is(err, ErrHeld) {
		t.Fatalf("exclusive beside shared holders: %v", err)
	}
	must(t, s1.Release())
	must(t, s2.Release())
	h, err := Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "excl"}, AcceleratorKey)
	must(t, err)
	if _, err := AcquireShared(dir, AcceleratorKey); !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "campaign excl") {
		t.Fatalf("shared beside an exclusive holder: %v", err)
	}
	must(t, h.Release())
}

// TestSharedAcceleratorHolderNamed: while a non-exclusive campaign uses
// the accelerator beside others (a shared hold plus its record on its
// candidate's endpoint), an exclusive Acquire of the accelerator is
// refused naming that campaign (id, pid, configuration, since), not an
// anonymous "in use by another hiro".
func TestSharedAcceleratorHolderNamed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "leases")
	cand, err := Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "demo-1", Config: "/cfg/hiro.toml", Candidate: "weak", SharesAccelerator: true}, ProductionKey("http://127.0.0.1:9001"))
	must(t, err)
	defer cand.Release()
	sh, err := AcquireShared(dir, AcceleratorKey)
	must(t, err)
	defer sh.Release()
	_, err = Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "excl"}, AcceleratorKey, ProductionKey("http://127.0.0.1:9002"))
	var held *HeldError
	if !errors.As(err, &held) || held.Holder == nil || held.Holder.Campaign != "demo-1" {
		t.Fatalf("exclusive acquire beside a shared campaign: %v, want a HeldError naming campaign demo-1", err)
	}
	for _, want := range []string{"campaign demo-1", "/cfg/hiro.toml", "since", "pid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	// Refused: the key it took before the accelerator is not left behind
	// holding its record (an unlocked campaign record reads as a dead
	// campaign to recover).
	_, err = Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "two"}, ProductionKey("http://127.0.0.1:9000"), ProductionKey("http://127.0.0.1:9001"))
	if !errors.As(err, &held) || held.Holder == nil || held.Holder.Campaign != "demo-1" {
		t.Fatalf("acquire of a held endpoint: %v, want a HeldError naming campaign demo-1", err)
	}
	if _, err := os.Stat(fileName(dir, ProductionKey("http://127.0.0.1:9000"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Acquire left its file: %v", err)
	}
	if dead, _, _ := Scan(dir); len(dead) != 0 {
		t.Errorf("a refused Acquire left a dead campaign: %+v", dead[0])
	}
}

// Probe forecasts Acquire's refusal without a lock and changes nothing:
// an exclusive holder refuses both modes, a campaign sharing the
// accelerator refuses it taken alone but not shared, free keys and a
// missing folder are no refusal, and the probe leaves no file behind.
func TestProbeForecastsAcquire(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "leases")
	prod, other := ProductionKey("http://127.0.0.1:9001"), ProductionKey("http://127.0.0.1:9002")
	if err := Probe(dir, []string{AcceleratorKey, prod}, nil); err != nil {
		t.Fatalf("probe of a missing folder: %v", err)
	}
	demo, err := Acquire(dir, &Lease{Kind: KindCampaign, Campaign: "demo-1", SharesAccelerator: true}, prod)
	must(t, err)
	sh, err := AcquireShared(dir, AcceleratorKey)
	must(t, err)
	var held *HeldError
	if err := Probe(dir, []string{AcceleratorKey, other}, nil); !errors.As(err, &held) || held.Key != AcceleratorKey || held.Holder == nil || held.Holder.Campaign != "demo-1" {
		t.Errorf("the accelerator alone beside a sharing campaign: %v, want a HeldError naming demo-1", err)
	}
	if err := Probe(dir, []string{other}, []string{AcceleratorKey}); err != nil {
		t.Errorf("the accelerator shared beside a sharing campaign: %v, want no refusal", err)
	}
	if err := Probe(dir, []string{prod}, nil); !errors.As(err, &held) || held.Key != prod {
		t.Errorf("a held endpoint: %v, want a HeldError on it", err)
	}
	if _, err := os.Stat(fileName(dir, other)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the probe made a lease file: %v", err)
	}
	sh.Release()
	demo.Release()
	excl, err := Acquire(dir, &Lease{Kind: KindCommand, Command: "hiro backend start"}, AcceleratorKey)
	must(t, err)
	if err := Probe(dir, nil, []string{AcceleratorKey}); !errors.As(err, &held) || held.Holder == nil || held.Holder.Command != "hiro backend start" {
		t.Errorf("the accelerator shared beside an exclusive holder: %v, want a HeldError naming it", err)
	}
	excl.Release()
	if err := Probe(dir, []string{AcceleratorKey, prod}, []string{AcceleratorKey}); err != nil {
		t.Errorf("every key released: %v", err)
	}
}

// One configuration run under two state homes holds one lease on
// production's endpoint and on the accelerator: the second run is refused,
// naming the first (issue 26 F6: each state home had its own lease folder,
// the second run saw no lease and both acted on production).
func TestTwoStateHomesShareTheEndpointsLease(t *testing.T) {
	t.Setenv("HIRO_LEASE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", t.TempDir())
	key := ProductionKey("http://127.0.0.1:11434")
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	first, err := Dir()
	must(t, err)
	h, err := Acquire(first, &Lease{Kind: KindCampaign, Campaign: "under-a"}, key, AcceleratorKey)
	must(t, err)
	defer h.Release()
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	second, err := Dir()
	must(t, err)
	for _, k := range []string{key, AcceleratorKey} {
		_, err = Acquire(second, &Lease{Kind: KindCampaign, Campaign: "under-b"}, k)
		var held *HeldError
		if !errors.As(err, &held) || held.Holder == nil || held.Holder.Campaign != "under-a" {
			t.Errorf("%s under another state home (lease folder %s, first %s): %v; want refused, naming campaign under-a", k, second, first, err)
		}
		if got := HeldBy(second, k); got == nil || got.Campaign != "under-a" {
			t.Errorf("HeldBy(%s) under another state home = %v; want campaign under-a", k, got)
		}
	}
}
