package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/who"
)

// Hooks are shell commands from the agent configuration, run by the
// daemon (not in the sandbox: a/ is the user's, and the model cannot
// write it) with a JSON payload on stdin, in the session's cwd, for at
// most hookTimeout. Exit status 2 blocks what is about to happen; its
// stderr says why. Injection points:
//
//	agentSpawn   first turn of a session    exit 2: the turn fails
//	preTurn      before a turn              exit 2: the turn fails
//	postTurn     after a turn               exit 2: stdout is the next prompt
//	preTool      before a tool call         exit 2: not run; stderr is its result
//	postTool     after a tool call          stdout is appended to the result
//	preCompact   before a compaction        exit 2: no compaction
//	postCompact  after a compaction         (notice only)
//	turnError    after a failed turn        (notice only)
//
// Every run is an event: {"type":"hook","data":{"hook":..,"exit":..,"ms":..}}.
const hookTimeout = 30 * time.Second

// hookResult is what the commands of one hook said.
type hookResult struct {
	blocked bool
	reason  string // stderr of the blocking command
	stdout  string // stdout of the commands that exited 0 (or of the blocking one)
}

func (r *Runner) hook(ctx context.Context, t *session.Turn, st *setup, name string, payload map[string]any) hookResult {
	var res hookResult
	cmds := st.agent.Hooks[name]
	if len(cmds) == 0 {
		return res
	}
	payload["hook"] = name
	payload["session"] = st.meta.ID
	payload["agent"] = st.meta.Agent
	payload["cwd"] = st.meta.Cwd
	in, _ := json.Marshal(payload)
	for _, c := range cmds {
		out, errText, code, ms := runHookCmd(ctx, c, st.meta.Cwd, in, r.hookEnv(t, st), st.meta.ID)
		t.Event("hook", map[string]any{"hook": name, "command": c, "exit": code, "ms": ms})
		switch code {
		case 0:
			res.stdout += out
		case 2:
			res.blocked, res.reason, res.stdout = true, strings.TrimSpace(errText), out
			if res.reason == "" {
				res.reason = "blocked by the " + name + " hook"
			}
			t.Chat(":: " + name + " hook blocked: " + res.reason + "\n")
			return res
		default:
			t.Chat(":: " + name + " hook failed (exit " + itoa(code) + "): " + shorten(strings.TrimSpace(errText), 300) + "\n")
		}
	}
	return res
}

// hookEnv is the daemon's environment without secrets (see redact.Env and
// docs/agents.md) plus the session's variables.
func (r *Runner) hookEnv(t *session.Turn, st *setup) []string {
	env := append(r.o.Redact.Env(os.Environ(), st.agent.PassEnv), "OLLIE_ID="+st.meta.ID)
	if r.o.Mount != "" {
		env = append(env, "OLLIE="+r.o.Mount, "OLLIE_SESSION="+r.o.Mount+"/"+t.S.TreePath())
	}
	return env
}

// hookShell runs a hook's command once its process group is registered
// (who.Stages.AddHook), so that the tree knows it for a hook from its
// first instruction: it waits for a line on descriptor 3, then execs the
// command, with no_new_privs when setpriv(1) is there (util-linux), which
// makes the FUSE bridge ask the daemon about it. A hook and everything it
// starts may do in the tree what the user may, except answer a consent
// request.
const hookShell = `IFS= read -r _ <&3; exec 3<&-; if command -v setpriv >/dev/null 2>&1; then exec setpriv --no-new-privs /bin/sh -c "$1"; fi; exec /bin/sh -c "$1"`

func runHookCmd(ctx context.Context, command, cwd string, stdin []byte, env []string, session string) (stdout, stderr string, code int, ms int64) {
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return "", err.Error(), -1, 0
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", hookShell, "hook", command)
	cmd.Dir, cmd.Env = cwd, env
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.ExtraFiles = []*os.File{gateR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err = cmd.Start()
	gateR.Close()
	if err == nil {
		defer who.Stages.AddHook(cmd.Process.Pid, session)()
		gateW.WriteString("go\n")
		gateW.Close()
		err = cmd.Wait()
	} else {
		gateW.Close()
	}
	ms = time.Since(start).Milliseconds()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		code, e = -1, *bytes.NewBufferString(err.Error())
	}
	if ctx.Err() == context.DeadlineExceeded {
		code = -1
		e.WriteString(" (timed out)")
	}
	return o.String(), e.String(), code, ms
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
