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
	buf        []byte // a stream's text so far (text is set from it by end)
}

// end sets r.text from a stream's events.
func (r *reply) end() {
	if r.buf != nil {
		r.text, r.buf = string(r.buf), nil
	}
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
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 4<<10), MaxCapture)
	for sc.Scan() {
		r.event(sc.Bytes())
	}
	r.end()
	return r
}

// event adds one line of an SSE stream to r: a "data:" event's text is
// appended, its finish_reason and usage kept; other lines are skipped.
func (r *reply) event(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" || !gjson.ValidBytes(data) {
		return
	}
	var chunk reply
	take(&chunk, gjson.ParseBytes(data), true)
	r.buf = append(r.buf, chunk.text...)
	if chunk.finish != "" {
		r.finish = chunk.finish
	}
	if chunk.prompt != 0 || chunk.completion != 0 {
		r.prompt, r.completion = chunk.prompt, chunk.completion
	}
	r.parsed = true
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
