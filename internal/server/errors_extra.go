package server

import (
	"errors"

	"github.com/lily-engine/lily/internal/engine"
)

// paramContextError is a context-length error for a request whose prompt field is not `messages`.
type paramContextError struct {
	param string
	err   error
}

func (e *paramContextError) Error() string { return e.err.Error() }
func (e *paramContextError) Unwrap() error { return e.err }

// withParam names param as the cause of a context-length error in err; other errors pass as they are.
func withParam(err error, param string) error {
	var cl *engine.ContextLengthError
	if errors.As(err, &cl) {
		return &paramContextError{param: param, err: err}
	}
	return err
}

// contextParam is the `param` of a context-length error: "messages" unless withParam named another.
func contextParam(err error) string {
	var pc *paramContextError
	if errors.As(err, &pc) {
		return pc.param
	}
	return "messages"
}
