package config

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/agnivade/levenshtein"
)

// maxSuggestDistance is the largest edit distance (Levenshtein, in
// characters) at which an unknown key is answered with "did you mean".
const maxSuggestDistance = 2

// unknownKeyErrors turns the keys the decoder did not use into one error
// per mistake: a key inside an unknown table is not reported again (the
// table is), each error names the line of the key in data when it can be
// found, and suggests the known key or table nearest in spelling.
func unknownKeyErrors(path string, data []byte, md toml.MetaData, und []toml.Key) Errors {
	unknown := make(map[string]bool, len(und))
	for _, k := range und {
		unknown[k.String()] = true
	}
	lines := keyLines(data)
	var es Errors
	for _, k := range und {
		if hasUnknownParent(k, unknown) {
			continue
		}
		last := k[len(k)-1]
		isTable := md.Type(k...) == "Hash" || md.Type(k...) == "ArrayHash"
		var msg, meant string
		switch {
		case literalKeyNames[last] && !isTable:
			msg = "an API key is never written in the configuration; put it in an environment variable and name it with api_key_env = \"NAME\", or in a file named by api_key_file = \"PATH\""
		case isTable:
			msg = "unknown table"
			if s := suggest(last, knownKeys(k[:len(k)-1])); s != "" {
				msg += fmt.Sprintf("; did you mean [%s]?", toml.Key(append(append([]string{}, k[:len(k)-1]...), s)).String())
			} else {
				msg += "; check its name against examples/hiro.toml"
			}
		default:
			msg = "unknown key"
			if s := suggest(last, knownKeys(k[:len(k)-1])); s != "" {
				msg += fmt.Sprintf("; did you mean %s?", s)
				meant = toml.Key(append(append([]string{}, k[:len(k)-1]...), s)).String()
			} else {
				msg += "; check its spelling against examples/hiro.toml (keys are snake_case)"
			}
		}
		if n := lines[k.String()]; n > 0 {
			msg = fmt.Sprintf("line %d: %s", n, msg)
		}
		es = append(es, &Error{File: path, Key: k.String(), Msg: msg, meant: meant})
	}
	return es
}

// hasUnknownParent reports whether a proper prefix of k is itself unknown.
func hasUnknownParent(k toml.Key, unknown map[string]bool) bool {
	for i := 1; i < len(k); i++ {
		if unknown[k[:i].String()] {
			return true
		}
	}
	return false
}

// knownKeys lists the keys the configuration accepts inside the table at
// parent (the TOML names of Config's fields, following structs, pointers,
// slices and maps, whose keys are names the user chooses). It is empty when
// parent is not a table of structs.
func knownKeys(parent []string) []string {
	t := reflect.TypeOf(Config{})
	for _, name := range parent {
		t = elemType(t)
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			f, ok := fieldByTOML(t, name)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	t = elemType(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if n := tomlName(t.Field(i)); n != "" {
			keys = append(keys, n)
		}
	}
	return keys
}

func elemType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

func tomlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if tag == "-" {
		return ""
	}
	if tag == "" {
		return f.Name
	}
	return tag
}

func fieldByTOML(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if tomlName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// Suggest returns the candidate nearest to word in spelling (at most
// maxSuggestDistance edits, case-insensitive), or "" when none is that
// near: the "did you mean" of an unknown key, for the plan's keys too.
func Suggest(word string, candidates []string) string { return suggest(word, candidates) }

// DidYouMean is Suggest written for a message after a quoted value:
// " (did you mean X?)", or "" when no candidate is near.
func DidYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// suggest returns the candidate nearest to word when it is at most
// maxSuggestDistance edits away (ties: the first in sorted order), else "".
func suggest(word string, candidates []string) string {
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	best, bestD := "", maxSuggestDistance+1
	for _, c := range sorted {
		if d := levenshtein.ComputeDistance(strings.ToLower(word), c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// keyLines maps the dotted path of each table header and key assignment
// in data to its 1-based line (the first one when repeated). It reads
// lines, not the TOML grammar: keys inside inline tables and lines inside
// multi-line strings are not found, and a key not found has no line.
// (The TOML library keeps key positions private.)
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	var table []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || l[0] == '#':
			continue
		case l[0] == '[':
			h := strings.TrimPrefix(strings.TrimPrefix(l, "["), "[")
			end := strings.Index(h, "]")
			if end < 0 {
				continue
			}
			table = splitDotted(h[:end])
			if _, ok := out[toml.Key(table).String()]; !ok {
				out[toml.Key(table).String()] = n
			}
		default:
			k, _, ok := strings.Cut(l, "=")
			if !ok {
				continue
			}
			parts := splitDotted(k)
			if parts == nil {
				continue
			}
			full := toml.Key(append(append([]string{}, table...), parts...)).String()
			if _, ok := out[full]; !ok {
				out[full] = n
			}
		}
	}
	return out
}

// splitDotted splits a TOML dotted key ("a.\"b.c\".d") into its parts,
// unquoting quoted ones; nil when s is not a plain key.
func splitDotted(s string) []string {
	var parts []string
	s = strings.TrimSpace(s)
	for s != "" {
		var p string
		switch s[0] {
		case '"', '\'':
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 {
				return nil
			}
			p, s = s[1:1+end], strings.TrimSpace(s[2+end:])
		default:
			i := strings.IndexByte(s, '.')
			if i < 0 {
				i = len(s)
			}
			p, s = strings.TrimSpace(s[:i]), s[i:]
			for _, r := range p {
				if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
					return nil
				}
			}
			if p == "" {
				return nil
			}
		}
		parts = append(parts, p)
		if s == "" {
			break
		}
		if s[0] != '.' {
			return nil
		}
		s = strings.TrimSpace(s[1:])
	}
	return parts
}
