package redact

import "reflect"

// Secrets returns s with every secret replaced by Placeholder (the
// registered values, also JSON- and HTML-escaped; bearer tokens; the
// values of secret-looking flags and keys; token shapes such as "sk-…")
// and local paths kept: for the operator's own logs (hiro serve's event
// log and status), where a path helps and a key must still not appear.
func Secrets(s string) string { return Default.Secrets(s) }

// SecretsValue is Secrets applied, in place, to every string reachable
// from ptr (see Value).
func SecretsValue(ptr any) { Default.SecretsValue(ptr) }

// Secrets is the package Secrets on r.
func (r *Redactor) Secrets(s string) string {
	k := r.snap()
	return r.apply(known{secrets: k.secrets}, s, Placeholder, func(p string) string { return p }, true)
}

// SecretsValue is the package SecretsValue on r.
func (r *Redactor) SecretsValue(ptr any) {
	k := r.snap()
	w := walker{r: r, k: known{secrets: k.secrets}}
	w.walk(reflect.ValueOf(ptr))
}
