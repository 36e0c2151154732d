package server

import "encoding/json"

// ExtraParams are the sampling controls beyond OpenAI's core set (mostly vLLM's spelling), shared
// by chat and completions.
type ExtraParams struct {
	// LogitBias maps token ids (as strings, OpenAI's form) to a bias in [-100, 100].
	LogitBias         map[string]float64 `json:"logit_bias"`
	StopTokenIDs      []int32            `json:"stop_token_ids"`
	IgnoreEOS         bool               `json:"ignore_eos"`
	MinTokens         *int               `json:"min_tokens"`
	IncludeStopStr    bool               `json:"include_stop_str_in_output"`
	SkipSpecialTokens *bool              `json:"skip_special_tokens"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`
	// ReturnTokensAsTokenIDs spells every logprobs token as "token_id:N" (vLLM).
	ReturnTokensAsTokenIDs bool            `json:"return_tokens_as_token_ids"`
	ResponseFormat         json.RawMessage `json:"response_format"`
}
