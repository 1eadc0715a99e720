package shadow

import (
	"testing"

	"github.com/tidwall/gjson"
)

// takeByPaths is take as gjson's paths read each field, one lookup per
// field: what take's one pass must agree with.
func takeByPaths(v gjson.Result, delta bool) reply {
	var r reply
	c := v.Get("choices.0")
	switch {
	case delta && c.Get("delta.content").Exists():
		r.text = c.Get("delta.content").String()
	case c.Get("message.content").Exists():
		r.text = c.Get("message.content").String()
	default:
		r.text = c.Get("text").String()
	}
	r.finish = c.Get("finish_reason").String()
	r.prompt = v.Get("usage.prompt_tokens").Int()
	r.completion = v.Get("usage.completion_tokens").Int()
	r.parsed = v.IsObject()
	return r
}

// TestTakeReadsAsPaths: the one-pass reader reads what the field paths
// read, on ordinary answers and odd ones (a repeated key, null, choices
// not an array, fields missing, escapes, not an object).
func TestTakeReadsAsPaths(t *testing.T) {
	for _, s := range []string{
		`{"choices":[{"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
		`{"id":"x","usage":{"completion_tokens":7,"prompt_tokens":2},"choices":[{"index":0,"finish_reason":"length","message":{"content":"a\nb \"q\" \u00e9"}}]}`,
		`{"choices":[{"delta":{"content":"par"},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"role":"assistant"},"message":{"content":"m"}}]}`,
		`{"choices":[{"text":"done","finish_reason":"stop"},{"text":"second"}]}`,
		`{"choices":[{"message":{"content":null},"text":"t"}]}`,
		`{"choices":[{"message":"flat","text":"t"}]}`,
		`{"choices":{"0":{"text":"keyed"}}}`,
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
		`{"choices":["str"],"usage":5}`,
		`{"choices":[{"text":"first"}],"choices":[{"text":"second"}],"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":9}}`,
		`{"choices":[{"finish_reason":"stop","finish_reason":"length","text":"a","text":"b"}]}`,
		`{"choices":[{"finish_reason":"custom_reason"}]}`,
		`[{"choices":[{"text":"in an array"}]}]`,
		`"just a string"`,
		`{}`,
	} {
		for _, delta := range []bool{false, true} {
			v := gjson.Parse(s)
			var got reply
			take(&got, v, delta)
			if want := takeByPaths(v, delta); got.text != want.text || got.finish != want.finish || got.prompt != want.prompt || got.completion != want.completion || got.parsed != want.parsed {
				t.Errorf("%s (delta %v): one pass read %+v, the paths %+v", s, delta, got, want)
			}
		}
	}
}

// TestParseReplyKeepsNoReference: a parsed reply's finish_reason, and a
// stream's text, hold none of the buffer they were read from (the
// readers reuse theirs); a JSON answer's text is read in place (no copy
// per pair: it is only read while the pair is scored, before the buffer
// is reused), so it changes with its buffer.
func TestParseReplyKeepsNoReference(t *testing.T) {
	for _, c := range []struct {
		body   string
		stream bool
	}{
		{`{"choices":[{"message":{"content":"hello"},"finish_reason":"odd_reason"}]}`, false},
		{"data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"odd_reason\"}]}\n\ndata: [DONE]\n\n", true},
	} {
		b := []byte(c.body)
		r := parseReply(b, c.stream)
		for i := range b {
			b[i] = 'x'
		}
		if wantText := map[bool]string{false: "xxxxx", true: "hello"}[c.stream]; r.text != wantText || r.finish != "odd_reason" {
			t.Errorf("stream %v: after its buffer changed the reply reads %q, %q; want %q, %q", c.stream, r.text, r.finish, wantText, "odd_reason")
		}
	}
}
