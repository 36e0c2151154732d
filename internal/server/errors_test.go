package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
)

func TestErrorInfo(t *testing.T) {
	tests := []struct {
		err         error
		status      int
		code, param string
	}{
		{&ParamError{Param: "top_p", Message: "x"}, 400, "invalid_value", "top_p"},
		{fmt.Errorf("wrapped: %w", &ParamError{Param: "n", Message: "x"}), 400, "invalid_value", "n"},
		{&engine.ContextLengthError{Prompt: 1, MaxTokens: 2, Context: 2}, 400, "context_length_exceeded", "messages"},
		{&engine.TokenRangeError{}, 400, "invalid_value", "prompt"},
		{engine.ErrEmptyPrompt, 400, "invalid_value", "prompt"},
		{&TemplateError{Err: errors.New("raise")}, 400, "invalid_value", "messages"},
		{fmt.Errorf("%w: x", ErrInvalidJSON), 400, "invalid_json", ""},
		{&http.MaxBytesError{Limit: 10}, 413, "request_too_large", ""},
		{ErrUnauthorized, 401, "invalid_api_key", ""},
		{ErrHostNotAllowed, 403, "host_not_allowed", ""},
		{&ModelNotFoundError{Model: "x"}, 404, "model_not_found", "model"},
		{ErrNotFound, 404, "not_found", ""},
		{&MethodError{Method: "GET", Allow: []string{"POST"}}, 405, "method_not_allowed", ""},
		{ErrQueueFull, 503, "server_busy", ""},
		{context.Canceled, statusClientClosed, "client_closed", ""},
		{errors.New("disk on fire"), 500, "internal_error", ""},
	}
	for _, tt := range tests {
		status, body := errorInfo(tt.err)
		param := ""
		if body.Error.Param != nil {
			param = *body.Error.Param
		}
		if status != tt.status || body.Error.Code == nil || *body.Error.Code != tt.code || param != tt.param || body.Error.Message == "" {
			t.Errorf("%v: %d %+v, want %d %s %q", tt.err, status, body, tt.status, tt.code, tt.param)
		}
	}
}

func TestJSONPath(t *testing.T) {
	for in, want := range map[string]string{
		"SamplingParams.temperature": "temperature", "stream_options.include_usage": "stream_options.include_usage",
		"SamplingParams.StreamOptions": "", "messages": "messages",
	} {
		if got := jsonPath(in); got != want {
			t.Errorf("%q: %q", in, got)
		}
	}
}
