package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/lily-engine/lily/internal/engine"
)

// Limits of request values.
const (
	maxTopLogprobs = 20
	maxStops       = 16
)

// decodeBody reads a JSON object from the request body into v. Unknown fields are ignored (clients
// send many); wrong types come back as *json.UnmarshalTypeError or *ParamError naming the field.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err // → 413
		}
		return &BodyError{Err: err} // malformed chunking, short body, deadline: the client's
	}
	if err := acquirePrep(r.Context()); err != nil { // decoding, rendering, tokenizing: bounded
		return err
	}
	return decodeJSON(body, v)
}

// decodeJSON decodes one JSON object from body into v.
func decodeJSON(body []byte, v any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return fmt.Errorf("%w: the body must be a JSON object", ErrInvalidJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		var pe *ParamError
		if errors.As(err, &ute) || errors.As(err, &pe) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON object", ErrInvalidJSON)
	}
	return nil
}

// genParams are the validated generation settings of a request.
type genParams struct {
	maxTokens    int
	maxSet       bool // the client gave a max; otherwise the rest of the context is used
	sampling     engine.Sampling
	stop         []string
	stream       bool
	includeUsage bool
	returnIDs    bool
	x            extraParams
}

func inRange(param string, v *float64, lo, hi float64) error {
	if v != nil && (math.IsNaN(*v) || *v < lo || *v > hi) {
		return &ParamError{Param: param, Message: fmt.Sprintf("must be between %g and %g, got %g", lo, hi, *v)}
	}
	return nil
}

// checkModel returns ModelNotFoundError unless name is empty or the served model.
func (s *Server) checkModel(name string) error {
	if name != "" && name != s.m.Name {
		return &ModelNotFoundError{Model: name}
	}
	return nil
}

// params validates the fields shared by chat and completions. maxTokens is the effective limit
// field (chat prefers max_completion_tokens); minMax is the smallest allowed value.
func (s *Server) params(p *SamplingParams, maxTokens *int, maxParam string, minMax int) (genParams, error) {
	g := genParams{stream: p.Stream, returnIDs: p.ReturnTokenIDs, sampling: s.defaults}
	if err := s.checkModel(p.Model); err != nil {
		return g, err
	}
	x, err := s.extra(p)
	if err != nil {
		return g, err
	}
	g.x = x
	if p.StreamOptions != nil {
		if !p.Stream {
			return g, &ParamError{Param: "stream_options", Message: "only allowed when stream is true"}
		}
		g.includeUsage = p.StreamOptions.IncludeUsage
	}
	if maxTokens != nil {
		if *maxTokens < minMax {
			return g, &ParamError{Param: maxParam, Message: fmt.Sprintf("must be at least %d, got %d", minMax, *maxTokens)}
		}
		g.maxTokens, g.maxSet = *maxTokens, true
	}
	for _, c := range []struct {
		name   string
		v      *float64
		lo, hi float64
	}{
		{"temperature", p.Temperature, 0, 2},
		{"top_p", p.TopP, math.SmallestNonzeroFloat64, 1},
		{"min_p", p.MinP, 0, 1},
		{"presence_penalty", p.PresencePenalty, -2, 2},
		{"frequency_penalty", p.FrequencyPenalty, -2, 2},
	} {
		if err := inRange(c.name, c.v, c.lo, c.hi); err != nil {
			return g, err
		}
	}
	sp := &g.sampling
	if p.Temperature != nil {
		sp.Temperature = *p.Temperature
	}
	if p.TopP != nil {
		sp.TopP = *p.TopP
	}
	if p.TopK != nil {
		if *p.TopK < -1 {
			return g, &ParamError{Param: "top_k", Message: fmt.Sprintf("must be -1 (off), 0 (off) or positive, got %d", *p.TopK)}
		}
		sp.TopK = max(*p.TopK, 0)
	}
	if p.MinP != nil {
		sp.MinP = *p.MinP
	}
	if p.PresencePenalty != nil {
		sp.PresencePenalty = *p.PresencePenalty
	}
	if p.FrequencyPenalty != nil {
		sp.FrequencyPenalty = *p.FrequencyPenalty
	}
	if p.Seed != nil {
		sp.Seed, sp.HasSeed = uint64(*p.Seed), true
	}
	if len(p.Stop) > maxStops {
		return g, &ParamError{Param: "stop", Message: fmt.Sprintf("at most %d stop strings", maxStops)}
	}
	for _, st := range p.Stop {
		if st == "" {
			return g, &ParamError{Param: "stop", Message: "stop strings must not be empty"}
		}
	}
	g.stop = p.Stop
	return g, nil
}

// fit sets r.MaxTokens from g and checks the request, with room for at least minMax completion
// tokens, through the engine's one check: never truncates; an omitted max uses the rest of the
// context.
func (s *Server) fit(r *engine.Request, g genParams, minMax int) error {
	if g.maxSet {
		r.MaxTokens = g.maxTokens
	} else {
		r.MaxTokens = max(s.ctx-len(r.Prompt), 0)
	}
	return s.eng.Check(r, minMax)
}

// chatOptions reads chat_template_kwargs: enable_thinking and preserve_thinking must be booleans;
// other keys pass through to the template.
func chatOptions(kw map[string]json.RawMessage) (RenderOptions, error) {
	opt := RenderOptions{AddGenerationPrompt: true}
	for k, v := range kw {
		switch k {
		case "enable_thinking", "preserve_thinking":
			var b *bool
			if err := json.Unmarshal(v, &b); err != nil {
				return opt, &ParamError{Param: "chat_template_kwargs." + k, Message: "must be a boolean"}
			}
			if k == "enable_thinking" {
				opt.EnableThinking = b
			} else {
				opt.PreserveThinking = b
			}
		default:
			if opt.Extra == nil {
				opt.Extra = map[string]json.RawMessage{}
			}
			opt.Extra[k] = v
		}
	}
	return opt, nil
}

// checkMessages makes sure messages is a non-empty array of objects with a string role.
func checkMessages(raw json.RawMessage) error {
	var msgs []struct {
		Role *string `json:"role"`
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return &ParamError{Param: "messages", Message: "is required"}
	}
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return &ParamError{Param: "messages", Message: "must be an array of message objects"}
	}
	if len(msgs) == 0 {
		return &ParamError{Param: "messages", Message: "must not be empty"}
	}
	for i, m := range msgs {
		if m.Role == nil {
			return &ParamError{Param: fmt.Sprintf("messages[%d].role", i), Message: "is required (a string)"}
		}
		switch *m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return &ParamError{Param: fmt.Sprintf("messages[%d].role", i), Message: fmt.Sprintf("unknown role %q", *m.Role)}
		}
	}
	return nil
}

// checkTools makes sure tools, when present, is an array.
func checkTools(raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(t, &tools); err != nil {
		return &ParamError{Param: "tools", Message: "must be an array of tool objects"}
	}
	return nil
}
