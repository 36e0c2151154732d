package server

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/lily-engine/lily/internal/engine"
)

// Limits of the extra sampling controls.
const (
	maxN           = 16  // choices per request
	maxLogitBias   = 300 // entries in logit_bias (OpenAI's limit)
	maxStopTokenID = 64  // entries in stop_token_ids
)

// extraParams are the validated ExtraParams and n.
type extraParams struct {
	n            int
	logitBias    map[int32]float32
	stopTokenIDs []int32
	ignoreEOS    bool
	minTokens    int
	includeStop  bool
	skipSpecial  bool
	repetition   float64
	idsAsTokens  bool
	format       *responseFormat // nil: free text
}

// extra validates n and the ExtraParams against the model's vocabulary.
func (s *Server) extra(p *SamplingParams) (extraParams, error) {
	x := extraParams{n: 1, skipSpecial: true, ignoreEOS: p.IgnoreEOS, includeStop: p.IncludeStopStr,
		idsAsTokens: p.ReturnTokensAsTokenIDs}
	if p.N != nil {
		if *p.N < 1 || *p.N > maxN {
			return x, &ParamError{Param: "n", Message: fmt.Sprintf("must be between 1 and %d, got %d", maxN, *p.N)}
		}
		x.n = *p.N
	}
	v := s.m.Backend.VocabSize()
	if len(p.LogitBias) > maxLogitBias {
		return x, &ParamError{Param: "logit_bias", Message: fmt.Sprintf("at most %d entries", maxLogitBias)}
	}
	for k, b := range p.LogitBias {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil || id < 0 || int(id) >= v {
			return x, &ParamError{Param: "logit_bias", Message: fmt.Sprintf("key %q is not a token id in [0, %d)", k, v)}
		}
		if math.IsNaN(b) || b < -100 || b > 100 {
			return x, &ParamError{Param: "logit_bias", Message: fmt.Sprintf("bias of %s must be between -100 and 100, got %g", k, b)}
		}
		if x.logitBias == nil {
			x.logitBias = map[int32]float32{}
		}
		x.logitBias[int32(id)] = float32(b)
	}
	if len(p.StopTokenIDs) > maxStopTokenID {
		return x, &ParamError{Param: "stop_token_ids", Message: fmt.Sprintf("at most %d ids", maxStopTokenID)}
	}
	for i, id := range p.StopTokenIDs {
		if id < 0 || int(id) >= v {
			return x, &ParamError{Param: fmt.Sprintf("stop_token_ids[%d]", i), Message: fmt.Sprintf("id %d is outside the vocabulary [0, %d)", id, v)}
		}
	}
	x.stopTokenIDs = p.StopTokenIDs
	if p.MinTokens != nil {
		if *p.MinTokens < 0 {
			return x, &ParamError{Param: "min_tokens", Message: fmt.Sprintf("must be at least 0, got %d", *p.MinTokens)}
		}
		x.minTokens = *p.MinTokens
	}
	if p.SkipSpecialTokens != nil {
		x.skipSpecial = *p.SkipSpecialTokens
	}
	if r := p.RepetitionPenalty; r != nil {
		if math.IsNaN(*r) || *r <= 0 || *r > 2 {
			return x, &ParamError{Param: "repetition_penalty", Message: fmt.Sprintf("must be in (0, 2], got %g", *r)}
		}
		x.repetition = *r
	}
	f, err := parseResponseFormat(p.ResponseFormat)
	if err != nil {
		return x, err
	}
	x.format = f
	return x, nil
}

// apply sets the request's stop ids, decoder and processors from x. Stop ids: the model's
// end-of-turn ids (unless ignore_eos) and stop_token_ids.
func (s *Server) apply(r *engine.Request, x extraParams) {
	r.StopIDs = nil
	if !x.ignoreEOS {
		r.StopIDs = append(r.StopIDs, s.stopIDs...)
	}
	for _, id := range x.stopTokenIDs {
		if !slices.Contains(r.StopIDs, id) {
			r.StopIDs = append(r.StopIDs, id)
		}
	}
	r.Decoder = s.m.NewDecoder(x.skipSpecial)
	r.LogitBias = x.logitBias
	r.RepetitionPenalty = x.repetition
	r.MinTokens = x.minTokens
	r.IncludeStop = x.includeStop
}
