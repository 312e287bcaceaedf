package execute

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// A job is a stage made ready to run: every interpreter and tool found
// before anything starts, so a typo fails the call without side effects.
type job struct {
	id       string // "2", or "3.1" for the first branch of stage 3
	label    string // "python3", "tool grep", "parallel"
	stage    Stage
	path     string   // program to exec
	argv     []string // its argv
	script   []byte   // inline code, given as /dev/fd/3
	timeout  time.Duration
	branches []*job
}

// scriptArgs are the options that make an interpreter read its program
// from a file instead of taking it as the first operand.
var scriptArgs = map[string][]string{
	"awk": {"-f"}, "gawk": {"-f"}, "mawk": {"-f"}, "nawk": {"-f"}, "busybox": {"sh"},
	"sed": {"-f"}, "jq": {"-f"},
}

var languageRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]*$`)

const scriptPath = "/dev/fd/" + "3" // sandbox.ScriptFD

func (e *Executor) plan(a *Args, spec Spec) ([]*job, error) {
	var jobs []*job
	for i, st := range a.Steps {
		j, err := e.planStage(st, strconv.Itoa(i+1), spec)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func (e *Executor) planStage(st Stage, id string, spec Spec) (*job, error) {
	j := &job{id: id, stage: st, timeout: time.Duration(st.Timeout * float64(time.Second))}
	switch {
	case st.Parallel != nil:
		j.label = "parallel"
		for i, b := range st.Parallel {
			bj, err := e.planStage(b, id+"."+strconv.Itoa(i+1), spec)
			if err != nil {
				return nil, err
			}
			j.branches = append(j.branches, bj)
		}
	case st.Tool != "":
		j.label = "tool " + st.Tool
		path, argv, err := findTool(spec.Tools, st.Tool, e.o.Sandbox.Path)
		if err != nil {
			return nil, errs.E(errs.KindOf(err), "execute_code: stage "+id, err)
		}
		j.path, j.argv = path, append(argv, st.Args...)
	default:
		j.label = st.Language
		if !languageRE.MatchString(st.Language) {
			return nil, badArgs("stage " + id + ": bad language name " + strconv.Quote(st.Language))
		}
		path, ok := lookPath(st.Language, e.o.Sandbox.Path)
		if !ok {
			return nil, errs.E(errs.NotExist, "execute_code: stage "+id+": unknown language "+
				strconv.Quote(st.Language)+": no interpreter of that name in the sandbox PATH")
		}
		j.path, j.script = path, []byte(st.Code)
		j.argv = append(append([]string{st.Language}, scriptArgs[st.Language]...), scriptPath)
	}
	return j, nil
}

// lookPath finds an executable called name in the colon-separated dirs;
// the daemon's own $PATH plays no part.
func lookPath(name, dirs string) (string, bool) {
	for _, d := range filepath.SplitList(dirs) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// findTool resolves a named tool to the program that runs it: the
// interpreter of its #! line (found in dirs when not absolute), or the
// tool itself when it is a binary. A tool need not be executable; its
// interpreter is.
func findTool(toolDir, name, dirs string) (path string, argv []string, err error) {
	if toolDir == "" {
		return "", nil, errs.E(errs.NotExist, "no tools directory is configured")
	}
	if !config.ValidName(name) {
		return "", nil, errs.E(errs.Invalid, "bad tool name "+strconv.Quote(name)+": want [A-Za-z0-9._-]+")
	}
	tool := filepath.Join(toolDir, name)
	// Lstat: a link in t/ could point at a secret, whose first line the
	// daemon (unsandboxed) would otherwise read for a #! line.
	fi, err := os.Lstat(tool)
	if err != nil || !fi.Mode().IsRegular() {
		return "", nil, errs.E(errs.NotExist, "no tool "+strconv.Quote(name)+" in "+toolDir)
	}
	f, err := os.Open(tool)
	if err != nil {
		return "", nil, err
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	if bytes.HasPrefix(head, []byte("\x7fELF")) {
		return tool, []string{tool}, nil
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) {
		return "", nil, errs.E(errs.Invalid, "tool "+name+" has no #! line naming its interpreter")
	}
	// As the kernel does: the interpreter, then at most one argument.
	fields := strings.SplitN(strings.TrimSpace(string(line[2:])), " ", 2)
	interp := fields[0]
	if !filepath.IsAbs(interp) {
		p, ok := lookPath(interp, dirs)
		if !ok {
			return "", nil, errs.E(errs.NotExist, "tool "+name+": interpreter "+interp+" not found")
		}
		interp = p
	} else if !exists(interp) {
		return "", nil, errs.E(errs.NotExist, "tool "+name+": interpreter "+interp+" not found")
	}
	argv = []string{interp}
	if len(fields) == 2 && strings.TrimSpace(fields[1]) != "" {
		argv = append(argv, strings.TrimSpace(fields[1]))
	}
	return interp, append(argv, tool), nil
}
