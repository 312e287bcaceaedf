package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"ollie.dev/ollie/internal/errs"
)

// FencedInstructions tells a model without native tool calling how to
// call execute_code; the agent loop adds it to the system prompt of such
// models and parses their replies with ParseFencedToolCalls.
const FencedInstructions = "To run code, write a fenced block whose info string is `execute_code` " +
	"followed by the language, e.g.\n\n```execute_code bash\nls -l\n```\n\n" +
	"or give the full arguments as JSON:\n\n```execute_code\n" +
	`{"steps": [{"code": "ls -l", "language": "bash"}], "timeout": 30}` +
	"\n```\n\nThen stop and wait: the output comes back in the next message. " +
	"Other code blocks are shown, not run.\n"

// ParseFencedToolCalls finds the execute_code calls in the reply of a
// model that cannot call tools natively. Two forms are calls, anywhere
// in the text:
//
//	```execute_code LANGUAGE          ```execute_code
//	CODE                              {"steps": [...], "timeout": 30}
//	```                               ```
//
// The first runs CODE in LANGUAGE (arguments {"steps":[{"code":CODE,
// "language":LANGUAGE}]}); the second gives the arguments as a JSON
// object. Fences follow CommonMark: three or more backticks or tildes,
// closed by a fence of the same character at least as long, so a block
// shown inside a longer fence (an example) is not a call. Other code
// blocks, even ```bash, are never calls: models write them to show code,
// not to run it.
//
// Calls get ids fenced_1, fenced_2, ... The error, of kind Invalid, names
// the blocks that could not be used (bad JSON, no closing fence); the
// calls returned are the good ones.
func ParseFencedToolCalls(text string) ([]ToolCall, error) {
	var calls []ToolCall
	var bad []error
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		fence, info, ok := openFence(lines[i])
		if !ok {
			continue
		}
		end := i + 1
		for end < len(lines) && !closesFence(lines[end], fence) {
			end++
		}
		body := strings.Join(lines[i+1:min(end, len(lines))], "")
		word, lang, _ := strings.Cut(strings.TrimSpace(info), " ")
		if word == "execute_code" {
			n := len(calls) + len(bad) + 1
			args, err := fencedArgs(body, strings.TrimSpace(lang), end < len(lines))
			if err != nil {
				bad = append(bad, fmt.Errorf("execute_code block %d: %v", n, err))
			} else {
				calls = append(calls, ToolCall{ID: "fenced_" + strconv.Itoa(len(calls)+1), Name: "execute_code", Args: args})
			}
		}
		i = end
	}
	if len(bad) > 0 {
		return calls, errs.E(errs.Invalid, errors.Join(bad...))
	}
	return calls, nil
}

func fencedArgs(body, lang string, closed bool) (json.RawMessage, error) {
	if !closed {
		return nil, errors.New("no closing fence")
	}
	if lang != "" {
		return json.Marshal(map[string]any{"steps": []map[string]string{{"code": body, "language": lang}}})
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		return nil, errors.New("arguments are not a json object; write ```execute_code bash for plain code")
	}
	var b bytes.Buffer
	json.Compact(&b, []byte(body))
	return b.Bytes(), nil
}

// openFence reports whether line opens a fenced code block, returning the
// fence and the info string.
func openFence(line string) (fence, info string, ok bool) {
	s := strings.TrimRight(line, "\r\n")
	t := strings.TrimLeft(s, " ")
	if len(s)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 || t[0] == '`' && strings.Contains(t[n:], "`") {
		return "", "", false
	}
	return t[:n], t[n:], true
}

func closesFence(line, fence string) bool {
	s := strings.TrimRight(line, "\r\n")
	t := strings.TrimLeft(s, " ")
	if len(s)-len(t) > 3 {
		return false
	}
	t = strings.TrimRight(t, " \t")
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == ""
}
