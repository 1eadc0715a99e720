package shadow

import (
	"bytes"
	"strings"
	"unsafe"

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

// end sets r.text from a stream's events: a view of r.buf, which
// nothing appends to after (no copy of the text).
func (r *reply) end() {
	if r.buf != nil {
		r.text, r.buf = view(r.buf), nil
	}
}

// view is b as a string without a copy, for parsing only: valid while b
// is unchanged, so nothing read from it is kept without a copy (the
// readers' buffers are reused from one reply to the next).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parseReply reads body, a JSON answer or an SSE stream ("data: {...}"
// lines, "data: [DONE]" at the end) of route (chat or completions). A
// JSON answer's text points into body (no copy: it is read only while
// the pair is scored, and dropped then), so body must not change while
// the reply is in use; a stream's text is its own.
func parseReply(body []byte, stream bool) reply {
	var r reply
	if !stream && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("data:")) {
		if !gjson.ValidBytes(body) {
			return r
		}
		take(&r, gjson.Parse(view(body)), false)
		return r
	}
	// Line by line, as bufio.ScanLines splits (event trims the '\r').
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		r.event(line)
	}
	r.end()
	return r
}

// event adds one line of an SSE stream to r: a "data:" event's text is
// appended, its finish_reason and usage kept; other lines are skipped.
// Nothing of line is kept without a copy.
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
	take(&chunk, gjson.Parse(view(data)), true)
	r.buf = append(r.buf, chunk.text...)
	if chunk.finish != "" {
		r.finish = chunk.finish
	}
	if chunk.prompt != 0 || chunk.completion != 0 {
		r.prompt, r.completion = chunk.prompt, chunk.completion
	}
	r.parsed = true
}

// take reads one JSON answer or stream chunk into r: the first choice's
// delta.content (a stream's chunk), else message.content, else text; its
// finish_reason; usage's prompt_tokens and completion_tokens; as
// gjson's paths "choices.0.…" and "usage.…" read them (the first of a
// repeated key), in one pass over the answer's keys instead of one per
// field. r.text may point into v (a copy is the caller's); r.finish
// does not.
func take(r *reply, v gjson.Result, delta bool) {
	var choices, usage gjson.Result
	var haveChoices, haveUsage bool
	if v.IsObject() {
		v.ForEach(func(k, val gjson.Result) bool {
			switch {
			case !haveChoices && k.Str == "choices":
				choices, haveChoices = val, true
			case !haveUsage && k.Str == "usage":
				usage, haveUsage = val, true
			}
			return !haveChoices || !haveUsage
		})
	}
	var d, msg, text, finish gjson.Result
	var haveD, haveMsg, haveText, haveFinish bool
	if c := choices.Get("0"); c.IsObject() {
		c.ForEach(func(k, val gjson.Result) bool {
			switch {
			case !haveD && k.Str == "delta":
				d, haveD = val, true
			case !haveMsg && k.Str == "message":
				msg, haveMsg = val, true
			case !haveText && k.Str == "text":
				text, haveText = val, true
			case !haveFinish && k.Str == "finish_reason":
				finish, haveFinish = val, true
			}
			return !haveD || !haveMsg || !haveText || !haveFinish
		})
	}
	if dc := d.Get("content"); delta && dc.Exists() {
		r.text = dc.String()
	} else if mc := msg.Get("content"); mc.Exists() {
		r.text = mc.String()
	} else {
		r.text = text.String()
	}
	r.finish = finishReason(finish.String())
	r.prompt = usage.Get("prompt_tokens").Int()
	r.completion = usage.Get("completion_tokens").Int()
	r.parsed = v.IsObject()
}

// finishReason is s with no reference to what it was read from: the
// OpenAI values as constants, any other copied.
func finishReason(s string) string {
	for _, f := range [...]string{"stop", "length", "tool_calls", "content_filter", "function_call"} {
		if s == f {
			return f
		}
	}
	return strings.Clone(s)
}
