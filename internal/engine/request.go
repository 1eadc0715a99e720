package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// RequestError describes a request that failed while a gate talked to a
// ready server (not during startup: Tracker.Classify covers that).
type RequestError struct {
	// StatusCode is the HTTP status of the server's error answer; 0 when
	// there was none (transport error, timeout, broken stream).
	StatusCode int
	// Message is the server's error message, or the transport error.
	Message string
	// Structured says the request carried a JSON Schema response_format.
	Structured bool
	// Exited says the engine process had exited when the error was seen.
	Exited bool
}

var reTemplateError = regexp.MustCompile(`(?i)template`)

// ClassifyRequest returns the failure class of a request error. A
// structured request is structured_output_rejected when the server refused
// it (4xx) and structured_output_crash when it gave no answer or a server
// error. Otherwise: engine_died when the engine exited; tokenizer_template
// for a client error about the chat template; probe_failed when the
// server is up and answered with an error (it serves, but the bounded
// request failed); else engine_died (the server stopped answering:
// refused connection, timeout, broken stream).
func ClassifyRequest(r RequestError) failure.Class {
	client := r.StatusCode >= 400 && r.StatusCode < 500
	switch {
	case r.Structured && client:
		return failure.ClassStructuredOutputRejected
	case r.Structured:
		return failure.ClassStructuredOutputCrash
	case r.Exited:
		return failure.ClassEngineDied
	case client && reTemplateError.MatchString(r.Message):
		return failure.ClassTokenizerTemplate
	case r.StatusCode > 0:
		return failure.ClassProbeFailed
	}
	return failure.ClassEngineDied
}
