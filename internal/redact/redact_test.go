package redact

import (
	"strings"
	"testing"
)

func TestStringShapes(t *testing.T) {
	r := &Redactor{secrets: map[string]bool{}, paths: map[string]string{}}
	r.AddPath("/home/alice", HomePlaceholder)
	r.AddPath("/srv/hiro-project", ProjectPlaceholder)
	r.Add("plain-registered-secret", "1") // "1" is too short to register
	cases := []struct{ in, want string }{
		{"vllm serve m --api-key sk-abcdefghijklmnopqrstu --port 8000", "vllm serve m --api-key <redacted> --port 8000"},
		{"args set --hf-token=hf_AbCdEfGhIjKlMnOpQrSt", "args set --hf-token=<redacted>"},
		{"--token abc123 --max-tokens 64 --tokenizer x", "--token <redacted> --max-tokens 64 --tokenizer x"},
		{"INFO non-default args: {'model': 'm', 'api_key': ['s3cr3t-value'], 'port': 8000}", "INFO non-default args: {'model': 'm', 'api_key': ['<redacted>'], 'port': 8000}"},
		{`{"token": "abc", "max_tokens": 10}`, `{"token": "<redacted>", "max_tokens": 10}`},
		{"env HF_TOKEN=whatever", "env HF_TOKEN=<redacted>"},
		{"Authorization: Bearer abcdefghijkl.mnop", "Authorization: Bearer <redacted>"},
		{"key sk-proj-ABCDEFGHIJKLMNOPQRSTUV in text", "key <redacted> in text"},
		{"uses plain-registered-secret here, 1 time", "uses <redacted> here, 1 time"},
		{"FileNotFoundError: /home/alice/models/x/config.json", "FileNotFoundError: <home>/models/x/config.json"},
		{"cd /srv/hiro-project/.hiro && /srv/hiro-projectX/y /home/alicesmith", "cd <project>/.hiro && /srv/hiro-projectX/y /home/alicesmith"},
		{"phase load: 4/4 shards, max-tokens 512", "phase load: 4/4 shards, max-tokens 512"},
		{"TOKENIZERS_PARALLELISM=false", "TOKENIZERS_PARALLELISM=false"},
		// Prose naming a secret flag keeps its words; a value is still redacted.
		{"The plan starts vllm with --api-key arg.", "The plan starts vllm with --api-key arg."},
		{"pass --token and --password flags", "pass --token and --password flags"},
		{"serve --api-key sk-123 --port 1", "serve --api-key <redacted> --port 1"},
		{"serve --api-key=abc", "serve --api-key=<redacted>"},
		{"serve --api-key hunter2.", "serve --api-key <redacted>"},
		// A configuration error about where a key is kept keeps its words.
		{"hiro.toml: backends.cand.api_key_env: environment variable K is not set", "hiro.toml: backends.cand.api_key_env: environment variable K is not set"},
		{"backends.prod.api_key_file: cannot read the API key", "backends.prod.api_key_file: cannot read the API key"},
		{"api_key: hunter2-value", "api_key: <redacted>"},
	}
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestEscapedForms(t *testing.T) {
	r := &Redactor{secrets: map[string]bool{}, paths: map[string]string{}}
	r.Add(`p"a<ss>w&rd`)
	r.AddPath("/home/alice", HomePlaceholder)
	h := string(r.HTML([]byte(`<p>value p&#34;a&lt;ss&gt;w&amp;rd at /home/alice/x</p>`)))
	if strings.Contains(h, "ss&gt;w") || !strings.Contains(h, "&lt;redacted&gt;") || !strings.Contains(h, "&lt;home&gt;/x") {
		t.Errorf("HTML: %s", h)
	}
	j := string(r.Text([]byte(`{"v": "p\"a\u003css\u003ew\u0026rd"}`)))
	if strings.Contains(j, "ss") {
		t.Errorf("JSON-escaped secret left: %s", j)
	}
}

func TestAddEnvAndArgs(t *testing.T) {
	r := &Redactor{secrets: map[string]bool{}, paths: map[string]string{}}
	r.AddEnv(map[string]string{"HF_TOKEN": "tok1", "VLLM_USE_V2_MODEL_RUNNER": "0", "LD_LIBRARY_PATH": "/opt/lib/long/path", "WEIRD": "a-long-opaque-value-xyz", "DB_PASS": "hunter2", "SHORT_TOKEN": "ab"})
	r.AddArgs([]string{"--api-key", "key-one", "--port", "8000", "--hf-token=key-two"})
	for _, want := range []string{"tok1", "a-long-opaque-value-xyz", "hunter2", "key-one", "key-two"} {
		if !r.secrets[want] {
			t.Errorf("%q not registered", want)
		}
	}
	for _, not := range []string{"0", "/opt/lib/long/path", "8000", "ab"} {
		if r.secrets[not] {
			t.Errorf("%q registered, must not be", not)
		}
	}
}

func TestValueWalksEverything(t *testing.T) {
	r := &Redactor{secrets: map[string]bool{"topsecret": true}, paths: map[string]string{}}
	type inner struct {
		S []string
		M map[string]any
	}
	v := &struct {
		A string
		P *inner
		I any
	}{A: "x topsecret", P: &inner{S: []string{"topsecret"}, M: map[string]any{"topsecret key": []any{"a topsecret"}, "n": 1.0}}, I: "topsecret"}
	r.Value(v)
	if v.A != "x <redacted>" || v.P.S[0] != Placeholder || v.I != Placeholder {
		t.Errorf("%+v", v)
	}
	if _, ok := v.P.M["<redacted> key"]; !ok || v.P.M["<redacted> key"].([]any)[0] != "a <redacted>" || v.P.M["n"] != 1.0 {
		t.Errorf("map: %+v", v.P.M)
	}
}

// Markdown writes placeholders as code spans in prose (they read the same
// in a terminal and rendered, no entities), bare inside code spans and
// fenced blocks, and still catches every secret shape.
func TestMarkdownPlaceholders(t *testing.T) {
	r := New()
	r.Add("s3cr3t-value-123")
	r.AddPath("/srv/proj", ProjectPlaceholder)
	doc := "- disk /srv/proj: passed (key s3cr3t-value-123)\n" +
		"- run `ls /srv/proj/x` then HF_TOKEN=hf-other-secret-1 and --api-key s3cr3t-value-123\n" +
		"- vllm: {'api_key': ['k-abcdefgh'], \"token\": \"t-abcdefgh\"} a&lt;s3cr3t-value-123\n" +
		"```\nlog at /srv/proj/logs/a.log\n```\n" +
		"| odd ` tick | /srv/proj |\n"
	got := string(r.Markdown([]byte(doc)))
	want := "- disk `<project>`: passed (key `<redacted>`)\n" +
		"- run `ls <project>/x` then HF_TOKEN=`<redacted>` and --api-key `<redacted>`\n" +
		"- vllm: {'api_key': ['`<redacted>`'], \"token\": \"`<redacted>`\"} a&lt;`<redacted>`\n" +
		"```\nlog at <project>/logs/a.log\n```\n" +
		"| odd ` tick | `<project>` |\n"
	if got != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", got, want)
	}
	if strings.ContainsAny(got, "\x00\x01") || strings.Contains(got, "&lt;redacted") || strings.Contains(got, "&lt;project") {
		t.Errorf("sentinels or entities left: %q", got)
	}
}

// TestSecretName: the names PostgreSQL's and MySQL's clients read a
// password from (PGPASSWORD, MYSQL_PWD) and stems inside a longer word
// are secret names; PWD (the shell's working directory), token counts and
// tokenizer settings are not.
func TestSecretName(t *testing.T) {
	for _, name := range []string{"HF_TOKEN", "OPENAI_API_KEY", "DB_PASS", "PGPASSWORD", "MYSQL_PWD", "REDIS_PW",
		"AWS_SECRET_ACCESS_KEY", "CLIENTSECRET", "XAPIKEY", "LDAP_PASSCODE", "--hf-token", "api_key", "smtpPassword"} {
		if !SecretName(name) {
			t.Errorf("SecretName(%q) = false, want true", name)
		}
	}
	for _, name := range []string{"PWD", "OLDPWD_DIR", "--max-tokens", "kv_bytes_per_token", "cost_per_token", "--tokenizer", "TOKENIZERS_PARALLELISM", "PASSTHROUGH",
		"CUDA_VISIBLE_DEVICES", "USER", "BYPASS_CACHE", "api_key_env", "backends.cand.api_key_file", "HF_TOKEN_PATH", "--api-key-file", "metrics_key_env"} {
		if SecretName(name) {
			t.Errorf("SecretName(%q) = true, want false", name)
		}
	}
}

// TestLooksLikeToken: token shapes and long random runs of letters and
// digits are tokens; words, flags, ports, paths, devices and model names
// are not (issue 26, F21: evidence withheld every env value).
func TestLooksLikeToken(t *testing.T) {
	for _, v := range []string{"sk-AbCdEfGhIjKlMnOpQrSt", "hf_AbCdEfGhIjKlMnOpQrSt", "AKIAABCDEFGHIJKLMNOP", "0123456789abcdef0123456789abcdef",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0", "x-key:Zq8XkP2mN7vR4tY9wL3sB6"} {
		if !LooksLikeToken(v) {
			t.Errorf("%q is not taken for a token", v)
		}
	}
	for _, v := range []string{"0", "8000", "fast", "--enforce-eager", "/srv/cache/models", "0,1,2,3", "FLASH_ATTN", "expandable_segments:True",
		"Qwen2.5-7B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3", "abcdefghijklmnopqrstuvwxyz", "127.0.0.1:11434"} {
		if LooksLikeToken(v) {
			t.Errorf("%q is taken for a token", v)
		}
	}
}
