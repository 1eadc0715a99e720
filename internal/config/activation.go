package config

import (
	"fmt"
	"slices"
	"strings"
)

// Activation is the [activation] section: the evidence 'hiro activate'
// asks for before production changes (docs/activation.md).
type Activation struct {
	// Require lists the gate kinds a campaign's evidence must hold, each
	// passed, to activate its candidate; default DefaultActivationRequire.
	// "semantic" is satisfied by a semantic gate or a shadow gate (live
	// traffic compared with production).
	Require []string `toml:"require" json:"require"`
}

// DefaultActivationRequire is the default policy: what the seed's
// campaign needed before activation (the pinned artifact, a real
// completion, structured output honoured, and extraction quality
// against production).
var DefaultActivationRequire = []string{"artifact", "ready_control", "structured_control", "semantic"}

// ActivationKinds are the gate kinds a policy may require (package
// qualify's kinds, and shadow).
var ActivationKinds = []string{"prereq", "artifact", "launch", "ready_control", "structured_control", "sequential", "concurrency", "semantic", "shadow"}

// Satisfies reports whether a gate of kind gateKind satisfies the
// requirement required: the same kind, or a shadow gate for semantic.
func Satisfies(required, gateKind string) bool {
	return required == gateKind || (required == "semantic" && gateKind == "shadow")
}

func (c *Config) validateActivation() Errors {
	var es Errors
	seen := map[string]bool{}
	for i, k := range c.Activation.Require {
		key := fmt.Sprintf("activation.require[%d]", i)
		switch {
		case !slices.Contains(ActivationKinds, k):
			es = append(es, &Error{File: c.Path, Key: key, Msg: fmt.Sprintf("%q is not a gate kind; use some of %s", k, strings.Join(ActivationKinds, ", "))})
		case seen[k]:
			es = append(es, &Error{File: c.Path, Key: key, Msg: fmt.Sprintf("%q is listed twice; list each kind once", k)})
		}
		seen[k] = true
	}
	return es
}
