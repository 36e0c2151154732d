package server

import (
	"fmt"
	"net/http"
)

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, ModelList{Object: "list", Data: []ModelInfo{s.modelInfo()}})
	return nil
}

// handleTokenize encodes a prompt, or renders and encodes chat messages (vLLM's /tokenize).
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) error {
	var req TokenizeRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	var ids []int32
	switch {
	case req.Prompt != nil && req.Messages != nil:
		return &ParamError{Param: "prompt", Message: "give either prompt or messages, not both"}
	case req.Prompt != nil:
		ids = s.m.Tok.Encode(*req.Prompt)
	case req.Messages != nil:
		opt, err := CheckChatInput(req.Messages, req.Tools, req.ChatTemplateKwargs)
		if err != nil {
			return err
		}
		if req.AddGenerationPrompt != nil {
			opt.AddGenerationPrompt = *req.AddGenerationPrompt
		}
		text, err := s.m.Chat.Render(req.Messages, req.Tools, opt)
		if err != nil {
			return &TemplateError{Err: err}
		}
		ids = s.m.Tok.Encode(text)
	default:
		return &ParamError{Param: "prompt", Message: "prompt or messages is required"}
	}
	resp := TokenizeResponse{Count: len(ids), MaxModelLen: s.ctx, Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []int32{}
	}
	if req.ReturnTokenStrs {
		resp.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			resp.TokenStrs[i], _ = s.m.Tok.Token(id)
		}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// handleDetokenize decodes token ids to text (special tokens kept).
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) error {
	var req DetokenizeRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	v := s.m.Backend.VocabSize() // the model's ids: those no token has decode as nothing
	for i, id := range req.Tokens {
		if id < 0 || int(id) >= v {
			return &ParamError{Param: fmt.Sprintf("tokens[%d]", i), Message: fmt.Sprintf("id %d is outside the vocabulary [0, %d)", id, v)}
		}
	}
	text, err := s.m.Tok.Decode(req.Tokens, false)
	if err != nil {
		return &ParamError{Param: "tokens", Message: err.Error()}
	}
	writeJSON(w, http.StatusOK, DetokenizeResponse{Prompt: text})
	return nil
}
