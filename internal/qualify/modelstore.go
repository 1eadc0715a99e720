package qualify

import (
	"fmt"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// ModelStoreWarnings are the plan's candidate and production profiles
// whose model is absent from the model store their env names (Ollama's
// OLLAMA_MODELS), read from disk: one sentence each, with the key to fix
// and the store's nearest model. Their launch would end in
// identity_mismatch (the candidate's aborts the campaign: gate_launch.go).
// Nothing is said of a store the profile does not name, or one that
// cannot be read (another user's, on another host): the server may see
// what hiro cannot (issue 26, T16).
func (p *Plan) ModelStoreWarnings(cfg *config.Config) []string {
	var profs []*config.Profile
	if c := cfg.Backends[p.Candidate]; c != nil {
		profs = append(profs, c)
	}
	if p.Production != "" {
		if prod, err := production.ProfileFor(cfg, p.Production); err == nil && prod != nil {
			profs = append(profs, prod)
		}
	}
	var out []string
	for _, prof := range profs {
		if w := modelStoreWarning(prof); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// modelStoreWarning is ModelStoreWarnings' sentence for prof, "" when its
// model is in its store or nothing can be said.
func modelStoreWarning(prof *config.Profile) string {
	e, err := engine.Lookup(prof.Engine)
	if err != nil || e.ModelStoreEnv == "" || prof.Model == "" || prof.Unmanaged {
		return ""
	}
	dir := prof.Env[e.ModelStoreEnv]
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(prof.Workdir, dir)
	}
	names, ok := e.StoreModels(dir)
	if !ok || e.MatchModel(prof.Model, names) {
		return ""
	}
	key := "backends." + prof.Name + ".model"
	has, fix := "holds no model", fmt.Sprintf("set %s to a model of that store, or create %q there", key, prof.Model)
	if len(names) > 0 {
		has = "holds " + termtext.Plural(len(names), "other model", "other models")
	}
	if near := engine.ClosestModel(prof.Model, names); near != "" {
		has += fmt.Sprintf(" (did you mean %q?)", near)
		fix = fmt.Sprintf("set %s to %q, or create %q there", key, near, prof.Model)
	}
	return fmt.Sprintf("%s %q is not in the model store %s (backends.%s.env.%s), which %s: its launch will fail with identity_mismatch; %s (%s)",
		key, prof.Model, dir, prof.Name, e.ModelStoreEnv, has, fix, "scripts/prepare-models.sh DIR, ollama create, ollama pull")
}
