package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LoadAbout leaves out the half-written profiles other than the one a
// command is about and names them with their errors; anything else fails
// as Load does.
func TestLoadAboutLeavesOutOtherBadProfiles(t *testing.T) {
	write := func(t *testing.T, s string) string {
		p := filepath.Join(t.TempDir(), "hiro.toml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const invalid = "\n[backends.next]\nengine = \"vllm\"\ncommand = \"vllm\"\nport = 0\n"
	const typo = "\n[backends.\"new.one\"]\nengine = \"vllm\"\nmodle = \"x\"\n"
	for _, tc := range []struct {
		name, extra, about string
		wantSkipped        string // "" when LoadAbout must fail
	}{
		{"invalid values", invalid, "prod", "next"},
		{"unknown key, dotted name", typo, "prod", "new.one"},
		{"every record", invalid, "", "next"},
		{"the profile itself", invalid, "next", ""},
		{"outside the profiles", invalid + "\n[serve]\nlisten = 3\n", "prod", ""},
		{"production names it", invalid, "prod", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := good + tc.extra
			if tc.name == "production names it" {
				src = strings.Replace(src, `backend = "prod"`, `backend = "next"`, 1)
			}
			p := write(t, src)
			if _, err := Load(p); err == nil {
				t.Fatal("Load accepted the half-written profile")
			}
			cfg, skipped, err := LoadAbout(p, tc.about)
			if tc.wantSkipped == "" {
				if err == nil {
					t.Fatalf("LoadAbout(%q) loaded; want Load's error", tc.about)
				}
				if _, lerr := Load(p); err.Error() != lerr.Error() {
					t.Errorf("LoadAbout's error %q differs from Load's %q", err, lerr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadAbout(%q): %v", tc.about, err)
			}
			if len(skipped) != 1 || skipped[0].Name != tc.wantSkipped || len(skipped[0].Errors) == 0 {
				t.Fatalf("skipped %+v, want %s with its errors", skipped, tc.wantSkipped)
			}
			for _, e := range skipped[0].Errors {
				if !strings.Contains(e.Key, tc.wantSkipped) {
					t.Errorf("error %q is not about %s", e, tc.wantSkipped)
				}
			}
			if _, err := cfg.Backend(tc.wantSkipped); err == nil {
				t.Errorf("the half-written profile %s is in the loaded configuration", tc.wantSkipped)
			}
			if prof, err := cfg.Backend("prod"); err != nil || prof.Port != 11500 || prof.ReadyTimeout.Seconds() != 90 {
				t.Errorf("the good profile: %+v, %v", prof, err)
			}
		})
	}
}
