package serve

import (
	"bytes"
	"encoding/json"
	"math"
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
