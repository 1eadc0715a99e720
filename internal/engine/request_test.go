package engine

import (
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

func TestClassifyRequest(t *testing.T) {
	for _, c := range []struct {
		r    RequestError
		want failure.Class
	}{
		{RequestError{StatusCode: 400, Message: "chat template not found"}, failure.ClassTokenizerTemplate},
		{RequestError{StatusCode: 400, Message: "bad request"}, failure.ClassProbeFailed},
		{RequestError{StatusCode: 500, Message: "internal"}, failure.ClassProbeFailed},
		{RequestError{StatusCode: 500, Message: "internal", Exited: true}, failure.ClassEngineDied},
		{RequestError{Message: "context deadline exceeded"}, failure.ClassEngineDied},
		{RequestError{Message: "connection refused", Exited: true}, failure.ClassEngineDied},
		{RequestError{StatusCode: 400, Message: "response_format not supported", Structured: true}, failure.ClassStructuredOutputRejected},
		{RequestError{StatusCode: 500, Message: "grammar crash", Structured: true}, failure.ClassStructuredOutputCrash},
		{RequestError{Message: "EOF", Structured: true, Exited: true}, failure.ClassStructuredOutputCrash},
	} {
		if got := ClassifyRequest(c.r); got != c.want {
			t.Errorf("ClassifyRequest(%+v) = %s, want %s", c.r, got, c.want)
		}
	}
}
