package chat

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Delta is one piece of parsed output. Exactly one of its fields is set.
type Delta struct {
	Reasoning string         // text for reasoning_content
	Content   string         // text for content
	ToolCall  *ToolCallDelta // a piece of a tool call
}

// ToolCallDelta is a piece of one tool call, in OpenAI streaming form.
type ToolCallDelta struct {
	Index     int    // the call's position among this response's calls, from 0
	Name      string // the function name, set only on the call's first delta
	Arguments string // the next fragment of the arguments JSON object
}

// Tags of the Qwen3.6 output format.
const (
	tagThinkOpen  = "<think>"
	tagThinkClose = "</think>"
	tagCallOpen   = "<tool_call>"
	tagCallClose  = "</tool_call>"
	tagFunction   = "<function="
	tagFuncClose  = "</function>"
	tagParam      = "<parameter="
	tagParamClose = "</parameter>"
)

type parseMode uint8

const (
	inReasoning parseMode = iota
	inContent
	inCallOpen    // after <tool_call>, before <function=NAME>
	inParams      // inside <function=…>, between parameters
	inParamName   // after <parameter=, before '>'
	inValue       // inside a parameter value
	inAfterFunc   // after </function>, expecting </tool_call>
	inRejectedTag // a <tool_call> block that is passed through as content
)

// Parser turns the text a Qwen3.6 model generates (everything after the generation prompt) into
// reasoning, content and tool-call deltas, as the text streams in.
//
// Reasoning runs up to </think> and content follows it; both are trimmed of surrounding white
// space as the chat template trims them on the next turn. A <tool_call> block whose <function=NAME>
// names one of the request's tools becomes a tool call: the name is sent as soon as it is complete,
// then each parameter as a fragment of the arguments JSON object when its </parameter> arrives,
// typed by the tool's JSON schema, in the order the model wrote them; the arguments close with
// </function>. A block that does not start with <function=NAME> for a known tool is passed through
// as content, tags included. Text inside a function that is not a parameter is dropped.
//
// Output never contains a partial tag, and the concatenated deltas do not depend on how the text
// is split into chunks. A Parser is used by one goroutine.
type Parser struct {
	tools toolSchemas
	mode  parseMode
	buf   string  // text received but not yet consumed
	out   []Delta // deltas of the current Add or Finish

	started, contentStarted bool   // some reasoning / content has been emitted (leading space dropped)
	pendingWS, contentWS    string // trailing white space held back from reasoning / content

	preWS    string // content white space held back when the current <tool_call> opened
	raw      string // the current <tool_call> block's text, for passing it through as content
	index    int    // index of the current or next tool call
	name     string // current function
	nParams  int    // parameters emitted for the current call
	key      string // current parameter name
	scanFrom int    // bytes of a parameter value already searched for </parameter>
}

// NewParser returns a parser for a response to a request with these tools (raw JSON array; nil or
// null for none). thinking says whether the prompt ended with an open <think> block, i.e. whether
// generation starts in reasoning. The error, for tools that are not a JSON array, wraps ErrInvalid.
func NewParser(tools json.RawMessage, thinking bool) (*Parser, error) {
	schemas, err := parseToolSchemas(tools)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	p := &Parser{tools: schemas, mode: inContent}
	if thinking {
		p.mode = inReasoning
	}
	return p, nil
}

// Add consumes the next chunk of generated text and returns the deltas it completes.
func (p *Parser) Add(chunk string) []Delta {
	p.buf += chunk
	for p.step(false) {
	}
	return p.flush()
}

// Finish ends the generation and returns what was held back: trailing text that could have begun
// a tag is emitted as text; trailing white space is dropped. A tool call cut off before its
// function name is complete is emitted as content; one cut off after it is completed (a parameter
// cut off inside its value keeps the value so far) and its arguments closed, so they are valid
// JSON. The Parser must not be used after Finish.
func (p *Parser) Finish() []Delta {
	for p.step(true) {
	}
	switch p.mode {
	case inParams, inParamName, inValue:
		p.closeArguments()
	}
	p.buf = ""
	return p.flush()
}

func (p *Parser) flush() []Delta {
	out := p.out
	p.out = nil
	return out
}

// step consumes what it can of p.buf in the current mode and reports whether it made progress.
// final means no more text will come.
func (p *Parser) step(final bool) bool {
	switch p.mode {
	case inReasoning:
		return p.stepReasoning(final)
	case inContent:
		return p.stepContent(final)
	case inCallOpen:
		return p.stepCallOpen(final)
	case inParams:
		return p.stepParams(final)
	case inParamName:
		return p.stepParamName(final)
	case inValue:
		return p.stepValue(final)
	case inAfterFunc:
		return p.stepAfterFunc(final)
	case inRejectedTag:
		return p.stepRejected(final)
	}
	return false
}

func (p *Parser) stepReasoning(final bool) bool {
	if !p.started {
		// Leading white space is dropped, and so is a repeated <think> the prompt already holds.
		p.buf = pyTrimLeft(p.buf)
		if strings.HasPrefix(p.buf, tagThinkOpen) {
			p.buf = p.buf[len(tagThinkOpen):]
			return true
		}
		if !final && strings.HasPrefix(tagThinkOpen, p.buf) {
			return false
		}
	}
	at, _, safe := scanTags(p.buf, tagThinkClose)
	if at >= 0 {
		p.emitReasoning(p.buf[:at])
		p.pendingWS = ""
		p.buf = p.buf[at+len(tagThinkClose):]
		p.mode = inContent
		return true
	}
	return p.consumeText(final, safe, p.emitReasoning)
}

func (p *Parser) stepContent(final bool) bool {
	at, _, safe := scanTags(p.buf, tagCallOpen)
	if at >= 0 {
		p.emitContent(p.buf[:at])
		p.preWS, p.contentWS = p.contentWS, ""
		p.raw = tagCallOpen
		p.buf = p.buf[at+len(tagCallOpen):]
		p.mode = inCallOpen
		return true
	}
	return p.consumeText(final, safe, p.emitContent)
}

// consumeText emits the first safe bytes of p.buf (all of it when final), never splitting a
// UTF-8 character, and reports whether it consumed anything.
func (p *Parser) consumeText(final bool, safe int, emit func(string)) bool {
	if final {
		safe = len(p.buf)
	} else {
		safe = runeBoundary(p.buf, safe)
	}
	if safe == 0 {
		return false
	}
	emit(p.buf[:safe])
	p.buf = p.buf[safe:]
	return true
}

func (p *Parser) stepCallOpen(final bool) bool {
	trimmed := pyTrimLeft(p.buf)
	p.raw += p.buf[:len(p.buf)-len(trimmed)]
	p.buf = trimmed
	if p.buf == "" {
		return false
	}
	if !strings.HasPrefix(p.buf, tagFunction) {
		if !final && strings.HasPrefix(tagFunction, p.buf) {
			return false
		}
		return p.reject()
	}
	rest := p.buf[len(tagFunction):]
	gt := strings.IndexByte(rest, '>')
	bad := strings.IndexAny(rest, "\n<")
	switch {
	case gt < 0 && bad < 0 && !final:
		return false
	case gt < 0 || (bad >= 0 && bad < gt):
		return p.reject()
	}
	name := rest[:gt]
	if _, ok := p.tools[name]; !ok {
		return p.reject()
	}
	p.buf = rest[gt+1:]
	p.raw = ""
	p.name, p.nParams = name, 0
	p.emitTool(ToolCallDelta{Index: p.index, Name: name})
	p.mode = inParams
	return true
}

// reject passes the current <tool_call> block through as content.
func (p *Parser) reject() bool {
	p.contentWS = p.preWS
	p.emitContent(p.raw)
	p.raw = ""
	p.mode = inRejectedTag
	return true
}

func (p *Parser) stepRejected(final bool) bool {
	at, _, safe := scanTags(p.buf, tagCallClose)
	if at >= 0 {
		end := at + len(tagCallClose)
		p.emitContent(p.buf[:end])
		p.buf = p.buf[end:]
		p.mode = inContent
		return true
	}
	return p.consumeText(final, safe, p.emitContent)
}

func (p *Parser) stepParams(final bool) bool {
	at, tag, safe := scanTags(p.buf, tagParam, tagFuncClose, tagCallClose)
	if at < 0 { // stray text inside the function is dropped
		if final {
			safe = len(p.buf)
		}
		p.buf = p.buf[safe:]
		return safe > 0
	}
	p.buf = p.buf[at+len(tag):]
	switch tag {
	case tagParam:
		p.mode = inParamName
	case tagFuncClose:
		p.closeArguments()
		p.mode = inAfterFunc
	case tagCallClose: // </function> missing
		p.closeArguments()
		p.mode = inContent
	}
	return true
}

func (p *Parser) stepParamName(final bool) bool {
	gt := strings.IndexByte(p.buf, '>')
	bad := strings.IndexAny(p.buf, "\n<")
	switch {
	case gt < 0 && bad < 0 && !final:
		return false
	case gt < 0 || (bad >= 0 && bad < gt): // not a parameter tag after all: drop it
		p.mode = inParams
		return true
	}
	p.key = p.buf[:gt]
	p.buf = p.buf[gt+1:]
	p.scanFrom = 0
	p.mode = inValue
	return true
}

func (p *Parser) stepValue(final bool) bool {
	from := max(0, p.scanFrom-len(tagParamClose)+1)
	if i := strings.Index(p.buf[from:], tagParamClose); i >= 0 {
		at := from + i
		p.emitParameter(p.buf[:at])
		p.buf = p.buf[at+len(tagParamClose):]
		p.mode = inParams
		return true
	}
	if !final {
		p.scanFrom = len(p.buf)
		return false
	}
	// Cut off inside a value: keep it, up to a </function> if the model closed the function.
	val := p.buf
	if i := strings.Index(val, tagFuncClose); i >= 0 {
		val = val[:i]
	}
	p.emitParameter(val)
	p.buf = ""
	p.mode = inParams
	return true
}

func (p *Parser) stepAfterFunc(final bool) bool {
	p.buf = pyTrimLeft(p.buf)
	switch {
	case p.buf == "":
		return false
	case strings.HasPrefix(p.buf, tagCallClose):
		p.buf = p.buf[len(tagCallClose):]
	case !final && strings.HasPrefix(tagCallClose, p.buf):
		return false
	}
	p.mode = inContent
	return true
}

// emitParameter sends one "key": value member of the arguments object. The template writes the
// value between newlines, so one leading and one trailing newline are removed.
func (p *Parser) emitParameter(val string) {
	val = strings.TrimPrefix(val, "\n")
	val = strings.TrimSuffix(val, "\n")
	frag := ", "
	if p.nParams == 0 {
		frag = "{"
	}
	frag += quoteJSON(p.key) + ": " + typedValue(p.tools[p.name][p.key], val)
	p.nParams++
	p.emitTool(ToolCallDelta{Index: p.index, Arguments: frag})
}

// closeArguments ends the current call's arguments object; the next call gets the next index.
func (p *Parser) closeArguments() {
	frag := "}"
	if p.nParams == 0 {
		frag = "{}"
	}
	p.emitTool(ToolCallDelta{Index: p.index, Arguments: frag})
	p.index++
}
