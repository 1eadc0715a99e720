package serve

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/redact"
)

// keySet holds bearer keys as SHA-256 digests: the comparison is in
// constant time over every key (no early exit on a match). The keys
// themselves are kept only in package redact's registry, so that a key
// sent where it does not belong (a model name) is redacted in the logs.
type keySet struct {
	digests [][sha256.Size]byte
}

// loadKeys reads keys from file (one per line, '#' comments, blank lines
// skipped; "" for none) and from the comma-separated variable env ("" for
// none). fileKey names the file's setting in messages
// ("serve.api_keys_file"). A key shorter than MinKeyLen is an error that
// names its source and length, never the key.
func loadKeys(file, fileKey, env string, lookup func(string) (string, bool)) (*keySet, error) {
	ks := &keySet{}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read the key file %s: %w", fileKey, file, err)
		}
		st, err := os.Stat(file)
		if err == nil && st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("%s: key file %s is readable by others (mode %o); chmod 600 it", fileKey, file, st.Mode().Perm())
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if err := checkKeyLen(line, fmt.Sprintf("%s: the key on line %d of %s", fileKey, n, file)); err != nil {
				return nil, err
			}
			ks.add(line)
		}
		if len(ks.digests) == 0 {
			return nil, fmt.Errorf("%s: key file %s holds no key; write one key per line", fileKey, file)
		}
	}
	if env != "" {
		if v, ok := lookup(env); ok {
			for i, k := range strings.Split(v, ",") {
				if k = strings.TrimSpace(k); k != "" {
					if err := checkKeyLen(k, fmt.Sprintf("$%s: key %d (comma-separated)", env, i+1)); err != nil {
						return nil, err
					}
					ks.add(k)
				}
			}
		}
	}
	return ks, nil
}

// checkKeyEnvs refuses a key variable the configuration names that is
// unset or holds no key: api_keys_env other than
// config.DefaultServeAPIKeysEnv (the default may be unset: no keys) and
// metrics_key_env. Unset, the router would run without the keys the
// operator meant it to have (no key at all, or /metrics on the API
// keys). The error is a *config.Error naming the key and the variable.
func checkKeyEnvs(cfg *config.Config, lookup func(string) (string, bool)) error {
	sc := &cfg.Serve
	for _, v := range []struct{ key, name, without string }{
		{"api_keys_env", sc.APIKeysEnv, "requests would need no key"},
		{"metrics_key_env", sc.MetricsKeyEnv, "/metrics would take the API keys"},
	} {
		if v.name == "" || (v.key == "api_keys_env" && v.name == config.DefaultServeAPIKeysEnv) {
			continue
		}
		if val, _ := lookup(v.name); strings.Trim(val, ", \t") == "" {
			return &config.Error{File: cfg.Path, Key: "serve." + v.key, Msg: fmt.Sprintf(
				"names $%s, which is unset or empty (without it %s); export %s=KEY (make one with `openssl rand -hex 16`) before starting hiro serve, or remove %s",
				v.name, v.without, v.name, v.key)}
		}
	}
	return nil
}

// MinKeyLen is the fewest characters a router key (API or metrics key)
// may have. Keys are redacted from every log as substrings, so a short
// key ("prod") would blank parts of ordinary words and, by what it
// blanks, reveal itself; a short key is also guessable.
const MinKeyLen = 16

// checkKeyLen refuses a key shorter than MinKeyLen; where names its
// source (the variable or the file and line), never the key itself.
func checkKeyLen(k, where string) error {
	if n := len(k); n < MinKeyLen {
		return fmt.Errorf("%s is %d characters; a key needs at least %d (make one with `openssl rand -hex 16`)", where, n, MinKeyLen)
	}
	return nil
}

func (ks *keySet) add(k string) {
	ks.digests = append(ks.digests, sha256.Sum256([]byte(k)))
	redact.Add(k)
}

// empty reports whether no key is configured (no authentication).
func (ks *keySet) empty() bool { return ks == nil || len(ks.digests) == 0 }

// check reports whether auth, a request's "Authorization" header, is
// "Bearer KEY" with one of the keys. With no key configured every request passes.
func (ks *keySet) check(auth []byte) bool {
	if ks.empty() {
		return true
	}
	const prefix = "Bearer "
	if len(auth) <= len(prefix) || !bytes.EqualFold(auth[:len(prefix)], []byte(prefix)) {
		return false
	}
	d := sha256.Sum256(bytes.TrimSpace(auth[len(prefix):]))
	ok := 0
	for i := range ks.digests {
		ok |= subtle.ConstantTimeCompare(d[:], ks.digests[i][:])
	}
	return ok == 1
}
