package shadow

import (
	"bufio"
	"bytes"

	"github.com/tidwall/gjson"
)

// reply is what scoring needs of one side's answer: the generated text
// (a chat message's content or a completion's text, a stream's deltas
// joined), its finish_reason and its usage.
type reply struct {
	text       string
	finish     string
	prompt     int64
	completion int64
	parsed     bool
}

// parseReply reads body, a JSON answer or an SSE stream ("data: {...}"
// lines, "data: [DONE]" at the end) of route (chat or completions).
func parseReply(body []byte, stream bool) reply {
	var r reply
	if !stream && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("data:")) {
		if !gjson.ValidBytes(body) {
			return r
		}
		take(&r, gjson.ParseBytes(body), false)
		return r
	}
	var text bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), MaxCapture)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" || !gjson.ValidBytes(data) {
			continue
		}
		var chunk reply
		take(&chunk, gjson.ParseBytes(data), true)
		text.WriteString(chunk.text)
		if chunk.finish != "" {
			r.finish = chunk.finish
		}
		if chunk.prompt != 0 || chunk.completion != 0 {
			r.prompt, r.completion = chunk.prompt, chunk.completion
		}
		r.parsed = true
	}
	r.text = text.String()
	return r
}

// take reads one JSON answer or stream chunk into r.
func take(r *reply, v gjson.Result, delta bool) {
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
}
