package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"testing"
	"time"
)

// TestAccessLineMatchesEncodingJSON: the access log's hand-built line is
// byte for byte what encoding/json writes for the same entry, for plain
// and hostile strings (quotes, HTML, control characters, invalid UTF-8,
// non-ASCII), empty and set optional fields, and floats of every range.
func TestAccessLineMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 16, 4, 5, 123456789, time.UTC)
	entries := []accessEntry{
		{Time: at, Remote: "127.0.0.1:5000", Method: "POST", Path: RouteChat, Model: "extraction", Backend: "prod",
			Status: 200, Bytes: 384, Stream: true, TTFBMS: 0.123, DurationMS: 1.5, Prompt: 12, Completion: 7},
		{Time: at.Truncate(time.Second), Remote: "[::1]:1", Method: "GET", Path: "/v1/models", Status: 401, Error: "unauthorized"},
		{Time: at, Model: "a\"b\\c<d>&e\n\t\x01", Error: "upstream reset", DurationMS: 0},
		{Time: at, Model: "modèle-ü 模型", Backend: "b", DurationMS: 1e-7, TTFBMS: 3e21},
		{Time: at, Model: "bad\xffutf8", DurationMS: 123456.789, TTFBMS: -2},
		{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600)), Status: 499, Bytes: -1, DurationMS: math.SmallestNonzeroFloat64},
	}
	for i, e := range entries {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(&e); err != nil {
			t.Fatal(err)
		}
		got := appendAccess(nil, &e)
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("entry %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}

// TestRequestFieldsDuplicateKeys: a key named twice is found however the
// second spelling differs (case, escapes, Unicode folding as Go's
// encoding/json applies it), past the small-slice path too; distinct
// keys are not confused.
func TestRequestFieldsDuplicateKeys(t *testing.T) {
	many := `{`
	for i := 0; i < 40; i++ {
		many += fmt.Sprintf(`"k%d":1,`, i)
	}
	for _, c := range []struct{ body, model, dup string }{
		{`{"model":"a","stream":true}`, "a", ""},
		{`{"model":"a","model":"b"}`, "a", "model"},
		{`{"model":"a","MODEL":"b"}`, "a", "MODEL"},
		{`{"model":"a","mod\u0065l":"b"}`, "a", "model"},
		{`{"stream":true,"ſtream":false,"model":"a"}`, "", "ſtream"}, // long s folds to s
		{`{"stream":true,"model":"a","\u212a":1,"k":2}`, "a", "k"},   // Kelvin sign folds to k
		{many + `"model":"a","k3":2}`, "a", "k3"},
		{many + `"model":"a"}`, "a", ""},
		{`[1,2]`, "", ""},
	} {
		m, _, dup := requestFields([]byte(c.body))
		if m.String() != c.model || dup != c.dup {
			t.Errorf("%.60s: model %q dup %q, want %q %q", c.body, m.String(), dup, c.model, c.dup)
		}
	}
}

// TestListenAddr: a router bound to every address says the host the
// operator configured, with the bound port; otherwise the bound address.
func TestListenAddr(t *testing.T) {
	for _, c := range []struct {
		configured string
		bound      *net.TCPAddr
		want       string
	}{
		{"0.0.0.0:8443", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8443}, "0.0.0.0:8443"},
		{":0", &net.TCPAddr{IP: net.IPv6unspecified, Port: 41000}, "[::]:41000"},
		{"[::]:8443", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8443}, "[::]:8443"},
		{"127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 41001}, "127.0.0.1:41001"},
		{"localhost:8400", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8400}, "127.0.0.1:8400"},
	} {
		if got := listenAddr(c.configured, c.bound); got != c.want {
			t.Errorf("listenAddr(%q, %v) = %q, want %q", c.configured, c.bound, got, c.want)
		}
	}
}
