package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidateRevision(t *testing.T) {
	cases := map[string]string{ // revision → words the error must contain ("" = valid)
		testRev:                  "",
		"main":                   "branch or tag",
		"v2.1":                   "branch or tag",
		"refs/pr/1":              "branch or tag",
		"49ec31e":                "abbreviated",
		strings.ToUpper(testRev): "lower case",
		"":                       "no revision",
		testRev + "0":            "branch or tag",
	}
	for rev, words := range cases {
		err := ValidateRevision(rev)
		if words == "" {
			if err != nil {
				t.Errorf("%q: %v", rev, err)
			}
			continue
		}
		if !errors.Is(err, ErrRevision) || !strings.Contains(err.Error(), words) {
			t.Errorf("%q: err = %v, want ErrRevision mentioning %q", rev, err, words)
		}
	}
}

func TestDigestCoversContentOnly(t *testing.T) {
	m := &Manifest{Repo: testRepo, Revision: testRev, Files: []File{
		{Path: "a.safetensors", Bytes: 3, SHA256: strings.Repeat("1", 64)},
		{Path: "b.json", Bytes: 2, SHA256: strings.Repeat("2", 64)},
	}}
	d := ComputeDigest(m)
	// Informational fields do not move it.
	m2 := *m
	m2.Created, m2.Dir, m2.Layout, m2.TotalBytes = time.Now(), "/elsewhere", LayoutHFCache, 99
	m2.Files = []File{m.Files[1], m.Files[0]} // order does not matter either
	m2.Files[0].MTime = time.Now()
	if ComputeDigest(&m2) != d {
		t.Error("digest moved with created/dir/layout/mtime/order")
	}
	// Each content field does.
	for name, edit := range map[string]func(*Manifest){
		"repo":     func(m *Manifest) { m.Repo = "acme/other" },
		"revision": func(m *Manifest) { m.Revision = otherRev },
		"path":     func(m *Manifest) { m.Files[0].Path = "c.safetensors" },
		"bytes":    func(m *Manifest) { m.Files[0].Bytes = 4 },
		"sha256":   func(m *Manifest) { m.Files[0].SHA256 = strings.Repeat("3", 64) },
		"drop":     func(m *Manifest) { m.Files = m.Files[:1] },
	} {
		c := *m
		c.Files = append([]File(nil), m.Files...)
		edit(&c)
		if ComputeDigest(&c) == d {
			t.Errorf("digest did not change with %s", name)
		}
	}
	if !digestRE.MatchString(d) {
		t.Errorf("digest %q is not sha256:<hex>", d)
	}
}

func TestWriteLoadRoundTrip(t *testing.T) {
	dir, _ := plainDir(t)
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	path := filepath.Join(out, "m.json")
	if err := Write(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Marshal(m)
	b, _ := Marshal(got)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip differs:\n%s\n%s", a, b)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

func TestWriteLeavesNothingOnError(t *testing.T) {
	out := t.TempDir()
	path := filepath.Join(out, "m.json")
	bad := &Manifest{Schema: SchemaID, Repo: testRepo, Revision: "main", Layout: LayoutPlain}
	if err := Write(path, bad); !errors.Is(err, ErrRevision) {
		t.Errorf("invalid manifest written: %v", err)
	}
	good := &Manifest{Schema: SchemaID, Repo: testRepo, Revision: testRev, Layout: LayoutPlain, Files: []File{}}
	good.Digest = ComputeDigest(good)
	if err := Write(filepath.Join(out, "no-such-dir", "m.json"), good); err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Errorf("write into a missing directory: %v", err)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 0 {
		t.Errorf("files left behind: %v", ents)
	}
}

func TestLoadRejects(t *testing.T) {
	dir, _ := plainDir(t)
	m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := Marshal(m)
	edit := func(f func(map[string]any)) []byte {
		var v map[string]any
		json.Unmarshal(good, &v)
		f(v)
		b, _ := json.Marshal(v)
		return b
	}
	file0 := func(v map[string]any) map[string]any { return v["files"].([]any)[0].(map[string]any) }
	cases := map[string]struct {
		data []byte
		want error
		msg  string
	}{
		"unknown key":    {edit(func(v map[string]any) { v["colour"] = "red" }), ErrManifest, "colour"},
		"schema":         {edit(func(v map[string]any) { v["schema"] = "hiro.artifact/v0" }), ErrManifest, "schema"},
		"branch":         {edit(func(v map[string]any) { v["revision"] = "main" }), ErrRevision, "revision"},
		"hash edited":    {edit(func(v map[string]any) { file0(v)["sha256"] = strings.Repeat("0", 64) }), ErrManifest, "digest"},
		"bad hash":       {edit(func(v map[string]any) { file0(v)["sha256"] = "xyz" }), ErrManifest, "files[0].sha256"},
		"escaping path":  {edit(func(v map[string]any) { file0(v)["path"] = "../etc/passwd" }), ErrManifest, "files[0].path"},
		"absolute path":  {edit(func(v map[string]any) { file0(v)["path"] = "/etc/passwd" }), ErrManifest, "absolute"},
		"total":          {edit(func(v map[string]any) { v["total_bytes"] = 1 }), ErrManifest, "total_bytes"},
		"trailing data":  {append(append([]byte(nil), good...), []byte("{}")...), ErrManifest, "trailing"},
		"not json":       {[]byte("revision: main"), ErrManifest, "invalid character"},
		"duplicate path": {edit(func(v map[string]any) { fs := v["files"].([]any); fs[1] = fs[0] }), ErrManifest, "twice"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.json")
			os.WriteFile(p, c.data, 0o644)
			_, err := Load(p)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want %v mentioning %q and the path", err, c.want, c.msg)
			}
		})
	}
}
