package execute

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// Description is the tool's description shown to the model. It and
// Schema are sent with every request, so every word costs: the test of
// the shipped prompt (defaults) holds the two with the system prompt under
// 600 tokens.
const Description = `Run a pipeline in a sandbox, in the working directory: each stage's stdout is the next one's stdin. ` +
	`A stage is code {"code","language"}, a tool of t/ {"tool","args"}, or {"parallel":[stages]} (same stdin; outputs joined in order). ` +
	`Result: the last stage's stdout, and each stage's stderr; on failure the failing stage and its exit status.`

// maxArg is the longest argument Linux passes to a program
// (MAX_ARG_STRLEN, 32 pages), less its terminating NUL.
const maxArg = 128<<10 - 1

// checkArg refuses, before anything runs, an argument exec would refuse
// with a bare "argument list too long" or "invalid argument", and says
// what to do instead: content goes on the tool's standard input.
func checkArg(id string, i int, a string) error {
	const fix = "; give content on the tool's standard input instead (every shipped tool reads it: a stage before it, " +
		`e.g. {"code": "cat <<'EOF'\n...\nEOF"}, pipes into it)`
	switch {
	case len(a) > maxArg:
		return badArgs(fmt.Sprintf("stage %s: argument %d is %d bytes, over the %d bytes one argument may have%s", id, i+1, len(a), maxArg, fix))
	case strings.IndexByte(a, 0) >= 0:
		return badArgs(fmt.Sprintf("stage %s: argument %d holds a NUL byte, which no argument can carry%s", id, i+1, fix))
	}
	return nil
}

// DefaultLanguage is the language of inline code that names none.
const DefaultLanguage = "bash"

// Schema is the JSON schema of the tool's arguments.
const Schema = `{"type":"object","properties":{` +
	`"steps":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/stage"}},` +
	`"timeout":{"type":"number","description":"seconds"}},` +
	`"required":["steps"],"additionalProperties":false,` +
	`"$defs":{"stage":{"type":"object","properties":{` +
	`"code":{"type":"string"},` +
	`"language":{"type":"string","description":"bash (default), sh, python3, perl, awk, jq, ..."},` +
	`"tool":{"type":"string"},` +
	`"args":{"type":"array","items":{"type":"string"}},` +
	`"parallel":{"type":"array","items":{"$ref":"#/$defs/stage"}},` +
	`"elevated":{"type":"boolean","description":"outside the sandbox, once a human allows it"},` +
	`"timeout":{"type":"number"}},` +
	`"additionalProperties":false}}}`

// Args are the tool's arguments.
type Args struct {
	Steps   []Stage `json:"steps"`
	Timeout float64 `json:"timeout,omitempty"` // seconds; 0 means the configured default

	timeout time.Duration
}

// Stage is one element of a pipeline: exactly one of Code (with
// Language), Tool (with Args) or Parallel.
type Stage struct {
	Code     string   `json:"code,omitempty"`
	Language string   `json:"language,omitempty"`
	Tool     string   `json:"tool,omitempty"`
	Args     []string `json:"args,omitempty"`
	Parallel []Stage  `json:"parallel,omitempty"`
	Elevated bool     `json:"elevated,omitempty"`
	Timeout  float64  `json:"timeout,omitempty"`
}

// Bounds on the shape of a call, so that a confused model cannot start
// hundreds of processes in one go.
const (
	maxStages = 64
	maxDepth  = 4
)

// ParseArgs decodes and checks the model's arguments against s's limits.
func ParseArgs(data []byte, s config.Sandbox) (*Args, error) {
	var a Args
	if err := strictJSON(data, &a); err != nil {
		return nil, badArgs(err.Error())
	}
	if len(a.Steps) == 0 {
		return nil, badArgs(`"steps" is missing or empty`)
	}
	max := time.Duration(s.MaxTimeout) * time.Second
	t, err := seconds(a.Timeout, max, "timeout")
	if err != nil {
		return nil, err
	}
	a.timeout = t
	if t == 0 {
		a.timeout = time.Duration(s.Timeout) * time.Second
	}
	n := 0
	for i := range a.Steps {
		if err := a.Steps[i].check(strconv.Itoa(i+1), 1, &n, max); err != nil {
			return nil, err
		}
	}
	return &a, nil
}

func (st *Stage) check(id string, depth int, n *int, max time.Duration) error {
	if *n++; *n > maxStages {
		return badArgs(fmt.Sprintf("more than %d stages", maxStages))
	}
	if depth > maxDepth {
		return badArgs(fmt.Sprintf("stage %s: parallel stages nested more than %d deep", id, maxDepth))
	}
	kinds := 0
	for _, set := range []bool{st.Code != "" || st.Language != "", st.Tool != "" || st.Args != nil, st.Parallel != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		return badArgs("stage " + id + ": needs code, tool or parallel")
	case kinds > 1:
		return badArgs("stage " + id + ": give only one of code, tool and parallel")
	case st.Language != "" && st.Code == "":
		return badArgs("stage " + id + ": empty code")
	case st.Args != nil && st.Tool == "":
		return badArgs("stage " + id + ": args need a tool")
	case st.Parallel != nil && len(st.Parallel) == 0:
		return badArgs("stage " + id + ": empty parallel")
	case st.Parallel != nil && st.Elevated:
		return badArgs("stage " + id + ": mark the branches elevated, not the parallel stage")
	}
	if st.Code != "" && st.Language == "" {
		st.Language = DefaultLanguage // models often leave it out
	}
	for i, a := range st.Args {
		if err := checkArg(id, i, a); err != nil {
			return err
		}
	}
	if _, err := seconds(st.Timeout, max, "stage "+id+": timeout"); err != nil {
		return err
	}
	for i := range st.Parallel {
		if err := st.Parallel[i].check(id+"."+strconv.Itoa(i+1), depth+1, n, max); err != nil {
			return err
		}
	}
	return nil
}

// seconds turns a timeout in seconds into a duration, refusing absurd ones.
func seconds(v float64, max time.Duration, what string) (time.Duration, error) {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, badArgs(what + " must be a positive number of seconds")
	}
	if v > max.Seconds() {
		return 0, badArgs(fmt.Sprintf("%s %g is more than the limit of %d seconds", what, v, int(max/time.Second)))
	}
	d := time.Duration(v * float64(time.Second))
	if v > 0 && d < time.Millisecond {
		return 0, badArgs(what + " is less than a millisecond")
	}
	return d, nil
}

// parseStage decodes one stage, as in the configuration's preapproved list.
func parseStage(data []byte) (Stage, error) {
	var st Stage
	if err := strictJSON(data, &st); err != nil {
		return st, err
	}
	n := 0
	return st, st.check("1", 1, &n, time.Hour)
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s: want %s, not %s", te.Field, kindOf(te.Type.Kind()), te.Value)
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		msg = strings.Replace(msg, "unknown field", "unknown key", 1)
		if msg == "EOF" {
			msg = "empty arguments"
		}
		return fmt.Errorf("%s", msg)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the arguments")
	}
	return nil
}

func kindOf(k reflect.Kind) string {
	switch k {
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return "a string"
}

func badArgs(msg string) error { return errs.E(errs.Invalid, "execute_code: "+msg) }

func itoa(i int) string { return strconv.Itoa(i) }
