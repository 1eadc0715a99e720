package shadow

import (
	"github.com/tidwall/gjson"

	"github.com/hiro-dev/hiro/internal/extract"
)

// Checker checks one reply on its own, as a progressive ramp compares
// the two backends on requests each answered alone (package ramp): an
// extraction reply with the validators of `hiro extract`, a
// response_format reply against the request's schema.
type Checker struct{ v *extract.Validator }

// NewChecker builds a Checker (the extraction validators).
func NewChecker() (*Checker, error) {
	v, err := extract.NewValidator()
	if err != nil {
		return nil, err
	}
	return &Checker{v: v}, nil
}

// Checkable reports whether a request's reply can be checked: it asks
// for a json_schema response_format (hiro's extraction requests do). A
// cheap read of one field: the router calls it before it keeps a reply.
func Checkable(body []byte) bool {
	return gjson.GetBytes(body, "response_format.type").Str == "json_schema"
}

// Check checks j's reply (captured with Job.Capture; Done called):
// checked is false for a reply that was not a success, was over
// MaxCapture, or whose request is plain text; invalid is true for a
// reply that fails its schema, or an extraction reply with a claim the
// validators reject.
func (c *Checker) Check(j *Job) (checked, invalid bool) {
	if j.status/100 != 2 || j.tooLarge {
		return false, false
	}
	j.streamed.end()
	r := j.streamed
	if !j.Stream {
		r = parseReply(j.reply, false)
	}
	req := classify(j.Body)
	switch req.kind {
	case KindExtraction:
		cs := scoreClaims(c.v, r, req.src)
		return true, !cs.schemaValid || cs.accepted < cs.claims
	case KindStructured:
		return true, !validJSON(req.schema, r.text)
	}
	return false, false
}
