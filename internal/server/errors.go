package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/lily-engine/lily/internal/engine"
)

// Errors the handlers return; errorInfo is the one place that turns them into HTTP statuses.
var (
	// ErrNotFound: no such route.
	ErrNotFound = errors.New("not found")
	// ErrUnauthorized: --api-key is set and the request lacks the matching Bearer token.
	ErrUnauthorized = errors.New("invalid or missing API key")
	// ErrHostNotAllowed: the Host header is not in the allowlist (DNS-rebinding protection).
	ErrHostNotAllowed = errors.New("host not allowed")
	// ErrQueueFull: the admission queue is full; retry later.
	ErrQueueFull = errors.New("the server is busy: the request queue is full")
	// ErrInvalidJSON: the body is not a JSON object.
	ErrInvalidJSON = errors.New("invalid JSON body")
)

// ParamError is a request parameter with a wrong type or value.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return fmt.Sprintf("%s: %s", e.Param, e.Message) }

// ModelNotFoundError is a request for a model this server does not serve.
type ModelNotFoundError struct{ Model string }

func (e *ModelNotFoundError) Error() string {
	return fmt.Sprintf("the model %q does not exist", e.Model)
}

// MethodError is a known route called with the wrong method.
type MethodError struct {
	Method string
	Allow  []string
}

func (e *MethodError) Error() string {
	return fmt.Sprintf("method %s not allowed (allowed: %s)", e.Method, strings.Join(e.Allow, ", "))
}

// TemplateError is an error of the chat template (a malformed conversation): a client error.
type TemplateError struct{ Err error }

func (e *TemplateError) Error() string { return "chat template: " + e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// statusClientClosed is logged for requests whose client went away (nginx's convention).
const statusClientClosed = 499

// errorInfo maps an error to its HTTP status and OpenAI error body. It is the only such mapping.
func errorInfo(err error) (int, ErrorResponse) {
	body := func(msg, typ, param, code string) ErrorResponse {
		e := ErrorBody{Message: msg, Type: typ}
		if param != "" {
			e.Param = &param
		}
		if code != "" {
			e.Code = &code
		}
		return ErrorResponse{Error: e}
	}
	const invalid = "invalid_request_error"
	var (
		pe  *ParamError
		me  *MethodError
		mnf *ModelNotFoundError
		te  *TemplateError
		cl  *engine.ContextLengthError
		tr  *engine.TokenRangeError
		mbe *http.MaxBytesError
		mte *MediaTypeError
		be  *BodyError
		syn *json.SyntaxError
		ute *json.UnmarshalTypeError
		msg = err.Error()
	)
	switch {
	case errors.As(err, &pe):
		return http.StatusBadRequest, body(msg, invalid, pe.Param, "invalid_value")
	case errors.As(err, &ute):
		param := jsonPath(ute.Field)
		return http.StatusBadRequest, body(fmt.Sprintf("%s: must be of type %s, not JSON %s", param, ute.Type, ute.Value),
			invalid, param, "invalid_type")
	case errors.As(err, &syn), errors.Is(err, ErrInvalidJSON):
		return http.StatusBadRequest, body(msg, invalid, "", "invalid_json")
	case errors.As(err, &cl):
		return http.StatusBadRequest, body(msg, invalid, contextParam(err), "context_length_exceeded")
	case errors.As(err, &tr), errors.Is(err, engine.ErrEmptyPrompt):
		return http.StatusBadRequest, body(msg, invalid, "prompt", "invalid_value")
	case errors.As(err, &te):
		return http.StatusBadRequest, body(msg, invalid, "messages", "invalid_value")
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, body(fmt.Sprintf("request body over %d bytes", mbe.Limit),
			invalid, "", "request_too_large")
	case errors.As(err, &mte):
		return http.StatusUnsupportedMediaType, body(msg, invalid, "", "unsupported_media_type")
	case errors.As(err, &be) && be.Timeout():
		return http.StatusRequestTimeout, body(msg, invalid, "", "request_timeout")
	case errors.As(err, &be):
		return http.StatusBadRequest, body(msg, invalid, "", "invalid_body")
	case errors.Is(err, ErrOriginNotAllowed):
		return http.StatusForbidden, body(msg, invalid, "", "origin_not_allowed")
	case errors.Is(err, ErrBusyReading):
		return http.StatusServiceUnavailable, body(msg, "server_error", "", "server_busy")
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, body(msg, invalid, "", "invalid_api_key")
	case errors.Is(err, ErrHostNotAllowed):
		return http.StatusForbidden, body(msg, invalid, "", "host_not_allowed")
	case errors.As(err, &mnf):
		return http.StatusNotFound, body(msg, invalid, "model", "model_not_found")
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, body(msg, invalid, "", "not_found")
	case errors.As(err, &me):
		return http.StatusMethodNotAllowed, body(msg, invalid, "", "method_not_allowed")
	case errors.Is(err, ErrQueueFull):
		return http.StatusServiceUnavailable, body(msg, "server_error", "", "server_busy")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return statusClientClosed, body("the client closed the request", "server_error", "", "client_closed")
	}
	// The cause goes to the log (route), not to the client: it may name files or internals.
	return http.StatusInternalServerError, body("internal error", "server_error", "", "internal_error")
}

// streamErrorBody is the error event for a stream that failed after it started; a server error
// is logged with its cause, which the event does not carry.
func (s *Server) streamErrorBody(r *http.Request, err error) ErrorResponse {
	status, body := errorInfo(err)
	if status >= 500 {
		s.log.Error("stream failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	return body
}

// retryAfterSeconds is the Retry-After a 503 carries.
const retryAfterSeconds = "1"

// writeError answers err in the OpenAI envelope with the status errorInfo gives it, plus the
// headers that status needs (Allow, Retry-After).
func writeError(w http.ResponseWriter, err error) int {
	status, body := errorInfo(err)
	var me *MethodError
	if errors.As(err, &me) {
		w.Header().Set("Allow", strings.Join(me.Allow, ", "))
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	var be *BodyError
	if errors.As(err, &be) {
		w.Header().Set("Connection", "close") // the rest of the body is unknown: no next request here
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lily"`)
	}
	writeJSON(w, status, body)
	return status
}

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"internal error: encoding the response","type":"server_error","param":null,"code":"internal_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// jsonPath drops the Go names of embedded structs from an UnmarshalTypeError field path
// ("SamplingParams.temperature" → "temperature"); the JSON names are all lower case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && !unicode.IsUpper(rune(p[0])) {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}

// marshal encodes v as JSON without HTML escaping (model text keeps its < and >).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
