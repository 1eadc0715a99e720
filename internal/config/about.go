package config

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Skipped is a backend profile left out by LoadAbout because it does not
// validate, with its errors (each naming its key path).
type Skipped struct {
	Name   string
	Errors Errors
}

// LoadAbout is Load for a command about one profile, name ("" for a
// command about every recorded backend, such as 'backend status'): a
// half-written [backends.OTHER] table must not block stopping a running,
// valid profile. When every error Load finds lies inside profiles other
// than name, those profiles are left out of the returned Config and
// reported in skipped, sorted by name; the rest is loaded and validated as
// Load does. Any other error (a syntax error, a key outside [backends], an
// error in profile name itself, or one that leaving the profiles out does
// not cure, such as production.backend naming one of them) is Load's error,
// unchanged.
func LoadAbout(path, name string) (cfg *Config, skipped []Skipped, err error) {
	cfg, err = Load(path)
	var es Errors
	if err == nil || !errors.As(err, &es) {
		return cfg, nil, err
	}
	abs, aerr := filepath.Abs(path)
	data, rerr := os.ReadFile(abs)
	if aerr != nil || rerr != nil {
		return nil, nil, err
	}
	var raw struct {
		Backends map[string]toml.Primitive `toml:"backends"`
	}
	if _, derr := toml.Decode(string(data), &raw); derr != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(raw.Backends))
	for n := range raw.Backends {
		names = append(names, n)
	}
	by := map[string]Errors{}
	for _, e := range es {
		p := profileOf(e.Key, names)
		if p == "" || p == name {
			return nil, nil, err
		}
		by[p] = append(by[p], e)
	}
	skip := make(map[string]bool, len(by))
	for p := range by {
		skip[p] = true
	}
	cfg, perr := parse(data, abs, skip)
	if perr != nil {
		return nil, nil, err
	}
	for p, pes := range by {
		skipped = append(skipped, Skipped{Name: p, Errors: pes})
	}
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].Name < skipped[j].Name })
	return cfg, skipped, nil
}

// profileOf is the profile among names whose table holds key
// ("backends.NAME" or below, NAME quoted as TOML quotes it when it holds
// a dot), the longest such name; "" when key is outside every profile.
func profileOf(key string, names []string) string {
	best := ""
	for _, n := range names {
		for _, form := range []string{"backends." + n, toml.Key{"backends", n}.String()} {
			if (key == form || strings.HasPrefix(key, form+".")) && len(n) > len(best) {
				best = n
			}
		}
	}
	return best
}

// othersThan is es less the errors inside the profiles in skip.
func othersThan(es Errors, skip map[string]bool) Errors {
	if len(skip) == 0 {
		return es
	}
	names := make([]string, 0, len(skip))
	for n := range skip {
		names = append(names, n)
	}
	var out Errors
	for _, e := range es {
		if profileOf(e.Key, names) == "" {
			out = append(out, e)
		}
	}
	return out
}
