package qualify

import (
	"os"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/redact"
)

// RegisterSecrets is registerSecrets for other commands (the CLI calls it
// with the loaded configuration before any command runs, so that the
// journal's public output knows the configuration's secrets too).
func RegisterSecrets(cfg *config.Config) { registerSecrets(cfg, nil) }

// registerSecrets tells package redact what this campaign knows to be
// secret or local before anything public is written: the environment
// values of every profile (its env, and the values its inherit_env
// variables have in hiro's own environment) and of every launch variant
// (redact.AddEnv's rule decides which; unset variables have none), the profiles' API
// keys, the values that
// follow secret-looking flags in their arguments, and the project's
// folders (the configuration's and the plan's folder, the top of the
// repository holding them, the state folder)
// with their placeholders.
func registerSecrets(cfg *config.Config, plan *Plan) {
	if cfg != nil {
		for _, p := range cfg.Backends {
			p.RegisterSecrets(os.LookupEnv) // env, inherit_env's values, secret flags' values
			if key, err := p.APIKey(nil); err == nil && key != "" {
				redact.Add(key) // the profile's API key (api_key_env, api_key_file)
			}
		}
		if cfg.Path != "" {
			redact.AddPath(filepath.Dir(cfg.Path), redact.ProjectPlaceholder)
			redact.AddPath(repoRoot(filepath.Dir(cfg.Path)), redact.ProjectPlaceholder)
		}
		redact.AddPath(cfg.StateDir, redact.StatePlaceholder)
	}
	if plan == nil {
		return
	}
	if plan.Path != "" {
		redact.AddPath(filepath.Dir(plan.Path), redact.ProjectPlaceholder)
		redact.AddPath(repoRoot(filepath.Dir(plan.Path)), redact.ProjectPlaceholder)
	}
	for _, g := range plan.Gates {
		if s, ok := g.Gate.(interface{ registerSecrets() }); ok {
			s.registerSecrets()
		}
	}
}

// repoRoot returns the top of the version-controlled work tree holding dir
// (the nearest folder, dir or above, with a ".git" entry), or "" when dir
// is not inside one. A configuration kept in a project's subfolder
// (examples/demo/hiro.toml) names files of the whole project ("../../models"),
// so the project folder public output hides is the work tree's top.
func repoRoot(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		dir = a
	}
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			if dir == os.Getenv("HOME") { // a home kept under git is <home>
				return ""
			}
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}
