package chat

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/lily-engine/lily/internal/grammar"
)

// ToolCallGrammar is the grammar of an answer made only of tool calls in the Qwen3.6 format the
// Parser reads:
//
//	<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
//
// for the function name (any of the tools when ""), once or, with parallel, one or more times
// separated by a newline. Parameters come in the order of their names, the required ones always;
// a string parameter's value is any text up to </parameter>, another type's value is JSON
// following its schema (a schema outside internal/grammar's subset is an error).
func ToolCallGrammar(tools json.RawMessage, name string, parallel bool) (*grammar.Node, error) {
	var list []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &list); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	var alts []*grammar.Node
	for _, t := range list {
		f := t.Function
		if name != "" && f.Name != name {
			continue
		}
		params, err := paramsGrammar(f.Parameters)
		if err != nil {
			return nil, fmt.Errorf("function %q: %w", f.Name, err)
		}
		call := grammar.Seq(grammar.Lit(tagCallOpen+"\n"+tagFunction+f.Name+">\n"), params,
			grammar.Lit(tagFuncClose+"\n"+tagCallClose))
		alts = append(alts, call)
	}
	if len(alts) == 0 {
		return nil, fmt.Errorf("no tool is named %q", name)
	}
	calls := grammar.Alt(alts...)
	answer := grammar.Seq(grammar.WS(2), calls)
	if parallel {
		answer = grammar.Seq(answer, grammar.Star(grammar.Seq(grammar.Lit("\n"), calls)))
	}
	return answer, nil
}

// paramsGrammar is the parameters of one call, from the function's parameters schema.
func paramsGrammar(schema json.RawMessage) (*grammar.Node, error) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if len(schema) > 0 && string(schema) != "null" {
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var kids []*grammar.Node
	for _, k := range names {
		var p struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(s.Properties[k], &p)
		open := grammar.Lit(tagParam + k + ">\n")
		var param *grammar.Node
		if t, _ := p.Type.(string); t == "string" || p.Type == nil {
			param = grammar.Seq(open, grammar.Until(tagParamClose), grammar.Lit("\n"))
		} else {
			v, err := grammar.SchemaNode(s.Properties[k])
			if err != nil {
				return nil, fmt.Errorf("parameter %q: %w", k, err)
			}
			param = grammar.Seq(open, v, grammar.Lit("\n"+tagParamClose+"\n"))
		}
		if !required[k] {
			param = grammar.Alt(grammar.Seq(), param)
		}
		kids = append(kids, param)
	}
	return grammar.Seq(kids...), nil
}
