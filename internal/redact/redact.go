package redact

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Placeholder replaces every secret in public output.
const Placeholder = "<redacted>"

// Placeholders of well-known folders.
const (
	// HomePlaceholder replaces the user's home folder ($HOME).
	HomePlaceholder = "<home>"
	// ProjectPlaceholder replaces the configuration's folder.
	ProjectPlaceholder = "<project>"
	// StatePlaceholder replaces the configuration's state folder.
	StatePlaceholder = "<state>"
	// PathPlaceholder replaces any other absolute local path (package
	// evidence's RedactPaths).
	PathPlaceholder = "<path>"
)

// IsPlaceholder reports whether s is one of hiro's placeholders
// (Placeholder, HomePlaceholder, ProjectPlaceholder, StatePlaceholder,
// PathPlaceholder) or one registered with AddPath on Default: the words in
// angle brackets that public output writes in place of what it withholds.
func IsPlaceholder(s string) bool {
	switch s {
	case Placeholder, HomePlaceholder, ProjectPlaceholder, StatePlaceholder, PathPlaceholder:
		return true
	}
	Default.mu.RLock()
	defer Default.mu.RUnlock()
	for _, p := range Default.paths {
		if p == s {
			return true
		}
	}
	return false
}

// MinSecretLen is the shortest value Add registers: shorter values ("0",
// "1", "on") would blank out unrelated text and are not secrets.
const MinSecretLen = 4

// Redactor holds the secrets and folders known at run time. The zero value
// is not usable; use New. It is safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets map[string]bool
	paths   map[string]string // folder (clean, absolute) → placeholder
}

// New returns a Redactor that knows the user's home folder ($HOME, when set
// and not "/") and no secret.
func New() *Redactor {
	r := &Redactor{secrets: map[string]bool{}, paths: map[string]string{}}
	if h := os.Getenv("HOME"); h != "" {
		r.AddPath(h, HomePlaceholder)
	}
	return r
}

// Default is the process-wide registry that the package functions use.
var Default = New()

// Add registers secret values known at run time (an API key read from a
// file, an environment value). Values shorter than MinSecretLen after
// trimming are ignored.
func Add(values ...string) { Default.Add(values...) }

// AddPath registers a local folder and its placeholder (e.g. the
// configuration's folder and ProjectPlaceholder).
func AddPath(dir, placeholder string) { Default.AddPath(dir, placeholder) }

// AddEnv registers the values of an environment map (a profile's or a
// variant's env, the values of a profile's inherit_env variables): every
// value of a secret-looking name (SecretName), and every other
// value that is long enough to be a credential (12 bytes or more, not a
// number, not a path).
func AddEnv(env map[string]string) { Default.AddEnv(env) }

// AddArgs registers the values that follow secret-looking flags in args
// ("--api-key", "K" and "--api-key=K").
func AddArgs(args []string) { Default.AddArgs(args) }

// String returns s with every secret and local path replaced.
func String(s string) string { return Default.String(s) }

// Value redacts, in place, every string reachable from ptr (a pointer to a
// struct, slice or map): struct fields, slice elements, map values and
// string map keys.
func Value(ptr any) { Default.Value(ptr) }

// Text redacts a rendered text document (Markdown, plain text).
func Text(b []byte) []byte { return Default.Text(b) }

// HTML redacts a rendered HTML document: secrets also in their
// HTML-escaped form, placeholders written escaped (&lt;redacted&gt;).
func HTML(b []byte) []byte { return Default.HTML(b) }

// Add registers secret values.
func (r *Redactor) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinSecretLen || v == Placeholder {
			continue
		}
		r.secrets[v] = true
	}
}

// AddPath registers a folder; "" and "/" are ignored.
func (r *Redactor) AddPath(dir, placeholder string) {
	if dir == "" {
		return
	}
	if a, err := filepath.Abs(dir); err == nil {
		dir = a
	}
	dir = filepath.Clean(dir)
	if dir == "/" || dir == "." {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths[dir] = placeholder
	// The same folder through symlinks (/tmp → /private/tmp and the like).
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir && real != "/" {
		r.paths[real] = placeholder
	}
}

// AddEnv registers an environment map's values (see the package AddEnv).
func (r *Redactor) AddEnv(env map[string]string) {
	for k, v := range env {
		if SecretName(k) || (len(v) >= 12 && !reNumber.MatchString(v) && !strings.HasPrefix(v, "/")) {
			r.Add(v)
		}
	}
}

// AddArgs registers the values of secret-looking flags in args.
func (r *Redactor) AddArgs(args []string) {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, eq := strings.Cut(a, "=")
		if !SecretFlag(name) {
			continue
		}
		if eq {
			r.Add(val)
		} else if i+1 < len(args) {
			r.Add(args[i+1])
		}
	}
}

var reNumber = regexp.MustCompile(`^[0-9.,:-]+$`)

// LooksLikeToken reports whether v has the shape of a credential whatever
// the name it is kept under: a well-known token shape (sk-..., hf_...,
// ghp_..., xoxb-..., AKIA...) or a run of at least MinTokenRun letters and
// digits, both present, with no separator (a random key, a hex digest, a
// JWT's parts). Words, flags, ports, paths and model names
// ("--enforce-eager", "8000", "/srv/cache", "Qwen2.5-7B-Instruct") are
// not.
func LooksLikeToken(v string) bool {
	if reToken.MatchString(v) {
		return true
	}
	for _, run := range reAlnumRun.FindAllString(v, -1) {
		if len(run) >= MinTokenRun && strings.ContainsAny(run, "0123456789") && strings.IndexFunc(run, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return true
		}
	}
	return false
}

// MinTokenRun is the shortest run of letters and digits LooksLikeToken
// takes for a token: 20, the length of the shortest common API keys
// (an AWS access key id) and longer than any word or model name.
const MinTokenRun = 20

var reAlnumRun = regexp.MustCompile(`[A-Za-z0-9]+`)

// secretWords are the words of a name that say it holds a credential;
// secretPairs the same for two consecutive words; secretStems are stems
// that say it inside a longer word (PGPASSWORD, CLIENTSECRET, XAPIKEY).
var (
	secretWords = map[string]bool{"token": true, "secret": true, "password": true, "passwd": true, "pass": true, "passphrase": true,
		"passcode": true, "pwd": true, "pw": true, "credential": true, "credentials": true, "auth": true, "authorization": true,
		"apikey": true, "bearer": true, "cookie": true}
	secretPairs = map[string]bool{"api key": true, "access key": true, "private key": true, "secret key": true, "client secret": true}
	secretStems = []string{"password", "passwd", "secret", "credential", "apikey"}
	// placeWords end a name that says where a credential is kept, not the
	// credential: its value is a variable's name or a path
	// (api_key_env, api_key_file, HF_TOKEN_PATH, metrics_key_file).
	placeWords = map[string]bool{"env": true, "file": true, "path": true, "dir": true}
)

// SecretName reports whether an environment variable or a key's name says
// it holds a credential: one of its words (split on "-", "_", "." and
// lower/upper case changes) is token, secret, password, pass, pwd, pw,
// auth, apikey, ..., a word holds password, passwd, secret, credential or
// apikey (PGPASSWORD, the convention of PostgreSQL's and MySQL's clients:
// PGPASSWORD, MYSQL_PWD), or two consecutive words are "api key", "access
// key", "private key". HF_TOKEN, OPENAI_API_KEY, DB_PASS, PGPASSWORD,
// MYSQL_PWD, --hf-token and 'api_key' are; a name ending in env, file,
// path or dir (api_key_env, api_key_file: where the credential is kept),
// --max-tokens, --tokenizer,
// TOKENIZERS_PARALLELISM, a rate or size per token (kv_bytes_per_token:
// the word after "per" is a unit) and the shell's working directory PWD (a
// path) are not.
func SecretName(name string) bool {
	words := splitWords(name)
	if len(words) == 1 && words[0] == "pwd" {
		return false // the shell's working directory
	}
	if n := len(words); n > 1 && placeWords[words[n-1]] {
		return false // where a credential is kept: api_key_env, api_key_file
	}
	for i, w := range words {
		if i > 0 && words[i-1] == "per" {
			continue // a rate or a size: kv_bytes_per_token, cost_per_token
		}
		if secretWords[w] {
			return true
		}
		for _, stem := range secretStems {
			if strings.Contains(w, stem) {
				return true
			}
		}
		if i > 0 && secretPairs[words[i-1]+" "+w] {
			return true
		}
	}
	return false
}

func splitWords(name string) []string {
	var words []string
	cur := []rune{}
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, c := range rs {
		switch {
		case c == '-' || c == '_' || c == '.' || c == ' ' || c == '\'' || c == '"':
			flush()
		case i > 0 && c >= 'A' && c <= 'Z' && rs[i-1] >= 'a' && rs[i-1] <= 'z':
			flush()
			cur = append(cur, c)
		default:
			cur = append(cur, c)
		}
	}
	flush()
	return words
}

// SecretFlag reports whether a command-line flag takes a credential
// (--api-key, --hf-token, --token, --password, ...).
func SecretFlag(flag string) bool {
	if !strings.HasPrefix(flag, "-") {
		return false
	}
	return SecretName(strings.TrimLeft(flag, "-"))
}

// The shapes of credentials in free text. Value character classes never
// include quotes, backslashes, commas or brackets, so that redacting the
// text of a JSON or HTML document never crosses a string's boundary.
// Candidates are matched broadly and kept only when SecretFlag or
// SecretName accepts the flag or key.
var (
	// --api-key VALUE, --hf-token=VALUE, -token VALUE.
	reFlagArg = regexp.MustCompile(`(^|[\s'"\[(,=])(--?[A-Za-z][A-Za-z0-9_-]*)(=|[ \t]+)([^\s"'\\,\]\}<>&\x00\x01]+)`)
	// 'api_key': ['VALUE'] / "token": "VALUE" / api_key='VALUE' / HF_TOKEN=VALUE.
	reKeyValue = regexp.MustCompile(`(['"]?)([A-Za-z][A-Za-z0-9_.-]*)(['"]?[ \t]*[:=][ \t]*)(\[[^\]\n]*\]|'[^'\n]*'|"[^"\n]*"|[^\s"'\\,\]\}<>&\x00\x01]+)`)
	// Bearer VALUE.
	reBearer = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)
	// sk-..., hf_..., ghp_..., xoxb-..., AKIA...
	reToken = regexp.MustCompile(`\b(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b`)
)

// snapshot returns the secrets (longest first) and folders (longest first).
func (r *Redactor) snapshot() ([]string, []string, map[string]string) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	secrets := make([]string, 0, len(r.secrets))
	for s := range r.secrets {
		secrets = append(secrets, s)
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	dirs := make([]string, 0, len(r.paths))
	paths := make(map[string]string, len(r.paths))
	for d, p := range r.paths {
		dirs = append(dirs, d)
		paths[d] = p
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	return secrets, dirs, paths
}

// String returns s with secrets, token shapes and local folders replaced.
func (r *Redactor) String(s string) string {
	return r.apply(r.snap(), s, Placeholder, func(p string) string { return p }, false)
}

// known is a snapshot of a Redactor's registry.
type known struct {
	secrets, dirs []string
	paths         map[string]string
}

func (r *Redactor) snap() known {
	s, d, p := r.snapshot()
	return known{s, d, p}
}

// apply is String with the placeholder rendering of a document format;
// escaped also replaces each secret's JSON- and HTML-escaped forms.
func (r *Redactor) apply(k known, s, ph string, wrap func(string) string, escaped bool) string {
	if s == "" {
		return s
	}
	secrets, dirs, paths := k.secrets, k.dirs, k.paths
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, ph)
		if escaped {
			if j := jsonEscape(sec); j != sec {
				s = strings.ReplaceAll(s, j, ph)
			}
			if h := html.EscapeString(sec); h != sec {
				s = strings.ReplaceAll(s, h, ph)
			}
		}
	}
	s = reBearer.ReplaceAllString(s, "${1} "+ph)
	s = reFlagArg.ReplaceAllStringFunc(s, func(m string) string {
		sm := reFlagArg.FindStringSubmatch(m)
		if !SecretFlag(sm[2]) || strings.Contains(sm[4], ph) {
			return m
		}
		if sm[3] != "=" && proseWord(sm[4]) {
			return m // "... and --api-key arg.": a sentence naming the flag
		}
		return sm[1] + sm[2] + sm[3] + ph
	})
	s = reKeyValue.ReplaceAllStringFunc(s, func(m string) string {
		sm := reKeyValue.FindStringSubmatch(m)
		if !SecretName(sm[2]) || strings.Contains(sm[4], ph) || strings.EqualFold(sm[4], "bearer") || strings.EqualFold(sm[4], "basic") {
			return m
		}
		return sm[1] + sm[2] + sm[3] + quoteLike(sm[4], ph)
	})
	s = reToken.ReplaceAllString(s, ph)
	for _, d := range dirs {
		s = replaceFolder(s, d, wrap(paths[d]))
	}
	return s
}

// proseWords are words that follow a flag's name in a sentence about it,
// not as its value ("--api-key flag", "--token and --password").
var proseWords = map[string]bool{"a": true, "an": true, "and": true, "or": true, "arg": true, "args": true,
	"argument": true, "arguments": true, "flag": true, "flags": true, "option": true, "options": true,
	"value": true, "is": true, "are": true, "was": true, "to": true, "of": true, "in": true, "on": true,
	"the": true, "with": true, "for": true, "from": true, "set": true, "not": true}

// proseWord reports whether v, the word after a secret flag's name and a
// space, reads as prose rather than a value: lowercase letters only that
// end a sentence ("arg.", "key;") or a word of proseWords. Credentials
// have digits, symbols or capitals, or are not followed by a full stop;
// the "--flag=value" form is always a value.
func proseWord(v string) bool {
	w := strings.TrimRight(v, ".;:!?")
	if w == "" {
		return false
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return w != v || proseWords[w]
}

// quoteLike keeps the value's brackets and quotes around the placeholder,
// so 'api_key': ['x'] becomes 'api_key': ['<redacted>'].
func quoteLike(v, ph string) string {
	switch {
	case strings.HasPrefix(v, "["):
		q := ""
		if t := strings.TrimSpace(v[1:]); len(t) > 0 && (t[0] == '\'' || t[0] == '"') {
			q = t[:1]
		}
		return "[" + q + ph + q + "]"
	case strings.HasPrefix(v, "'") || strings.HasPrefix(v, `"`):
		return v[:1] + ph + v[:1]
	}
	return ph
}

// replaceFolder replaces dir where it starts a path: followed by "/" or by
// a character that cannot continue a file name, and not preceded by one
// that would make it the middle of a longer path.
func replaceFolder(s, dir, ph string) string {
	if !strings.Contains(s, dir) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, dir)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(dir)
		okBefore := i == 0 || !pathChar(s[i-1])
		okAfter := end == len(s) || s[end] == '/' || !pathChar(s[end])
		if okBefore && okAfter {
			b.WriteString(s[:i])
			b.WriteString(ph)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func pathChar(c byte) bool {
	return c == '/' || c == '.' || c == '_' || c == '-' || c == '~' || c == '+' ||
		(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Text redacts a rendered text document.
func (r *Redactor) Text(b []byte) []byte {
	return []byte(r.apply(r.snap(), string(b), Placeholder, func(p string) string { return p }, true))
}

// HTML redacts a rendered HTML document; placeholders are written escaped.
func (r *Redactor) HTML(b []byte) []byte {
	esc := html.EscapeString(Placeholder)
	return []byte(r.apply(r.snap(), string(b), esc, html.EscapeString, true))
}

// Value redacts every string reachable from ptr, in place.
func (r *Redactor) Value(ptr any) {
	w := walker{r: r, k: r.snap()}
	w.walk(reflect.ValueOf(ptr))
}

type walker struct {
	r *Redactor
	k known
}

func (w walker) str(s string) string {
	return w.r.apply(w.k, s, Placeholder, func(p string) string { return p }, false)
}

func (r walker) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		if v.Kind() == reflect.Interface {
			// Values inside an interface are not addressable: redact a copy
			// and put it back.
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			r.walk(c)
			if v.CanSet() {
				v.Set(c)
			}
			return
		}
		r.walk(e)
	case reflect.String:
		if v.CanSet() {
			v.SetString(r.str(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				r.walk(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			r.walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		type kv struct{ k, v reflect.Value }
		var items []kv
		iter := v.MapRange()
		for iter.Next() {
			items = append(items, kv{iter.Key(), iter.Value()})
		}
		for _, it := range items {
			nv := reflect.New(it.v.Type()).Elem()
			nv.Set(it.v)
			r.walk(nv)
			k := it.k
			if k.Kind() == reflect.String {
				nk := reflect.New(k.Type()).Elem()
				nk.SetString(r.str(k.String()))
				if nk.String() != k.String() {
					v.SetMapIndex(k, reflect.Value{})
				}
				k = nk
			}
			v.SetMapIndex(k, nv)
		}
	}
}

// Markdown redacts a rendered Markdown document (report.md): secrets also
// in their JSON- and HTML-escaped forms, as Text does. A placeholder is
// written as a code span (`<home>`/models) so that it reads the same in a
// terminal and in rendered Markdown (a bare <home> would be dropped as a
// raw HTML tag, an entity &lt;home&gt; is noise in a terminal); inside a
// code span or a fenced code block, where text is literal, it is written
// as it is.
func Markdown(b []byte) []byte { return Default.Markdown(b) }

// Sentinels around the placeholders apply writes for Markdown; markdownSpans
// turns them into code spans or bare text by context.
const (
	phOpen  = "\x00"
	phClose = "\x01"
)

// Markdown redacts a rendered Markdown document (see the package Markdown).
func (r *Redactor) Markdown(b []byte) []byte {
	s := strings.NewReplacer(phOpen, "", phClose, "").Replace(string(b))
	s = r.apply(r.snap(), s, phOpen+Placeholder+phClose, func(p string) string { return phOpen + p + phClose }, true)
	return []byte(markdownSpans(s))
}

// markdownSpans replaces each sentinel-wrapped placeholder of s by a code
// span, or by the bare placeholder inside a fenced code block (a line
// opening with ``` or ~~~) or an inline code span (a run of backticks up to
// the next run of the same length on the line).
func markdownSpans(s string) string {
	if !strings.Contains(s, phOpen) {
		return s
	}
	var b strings.Builder
	fence := ""
	for _, line := range strings.SplitAfter(s, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) <= 3 {
			for _, f := range []string{"```", "~~~"} {
				if strings.HasPrefix(t, f) && (fence == "" || fence == f) {
					if fence == "" {
						fence = f
					} else {
						fence = ""
					}
					break
				}
			}
		}
		if fence != "" || !strings.Contains(line, phOpen) {
			b.WriteString(strings.NewReplacer(phOpen, "", phClose, "").Replace(line))
			continue
		}
		code := 0 // length of the open code span's backtick run, 0 outside
		for j := 0; j < len(line); {
			switch {
			case line[j] == '`':
				n := 1
				for j+n < len(line) && line[j+n] == '`' {
					n++
				}
				switch {
				case code == 0 && ClosesCodeSpan(line[j+n:], n):
					code = n
				case code == n:
					code = 0
				}
				b.WriteString(line[j : j+n])
				j += n
			case strings.HasPrefix(line[j:], phOpen):
				end := strings.Index(line[j:], phClose)
				if end < 0 {
					j += len(phOpen)
					continue
				}
				ph := line[j+len(phOpen) : j+end]
				if code == 0 {
					ph = "`" + ph + "`"
				}
				b.WriteString(ph)
				j += end + len(phClose)
			case strings.HasPrefix(line[j:], phClose):
				j += len(phClose)
			default:
				b.WriteByte(line[j])
				j++
			}
		}
	}
	return b.String()
}

// ClosesCodeSpan reports whether s holds a run of exactly n backticks,
// which closes a Markdown code span opened by a run of n (CommonMark: an
// unmatched run is literal text).
func ClosesCodeSpan(s string, n int) bool {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := 1
		for i+m < len(s) && s[i+m] == '`' {
			m++
		}
		if m == n {
			return true
		}
		i += m
	}
	return false
}
