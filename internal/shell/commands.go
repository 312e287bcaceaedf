package shell

import (
	"fmt"
	"strings"
)

// A command is a /line of the shell. Most are one file of the session.
type command struct {
	name, args, doc string
	run             func(sh *Shell, arg string) (quit bool)
}

var commands []command

func init() {
	commands = []command{
		{"help", "", "this list", (*Shell).help},
		{"stop", "", "stop the running turn (ctl stop)", ctl("stop")},
		{"resume", "", "continue the turn a restart of the daemon cut, then the queue (ctl resume)", (*Shell).resume},
		{"compact", "", "summarize the history now (ctl compact)", (*Shell).compact},
		{"clear", "", "start the history afresh; the old one is kept (ctl clear)", ctl("clear")},
		{"model", "[NAME]", "set the model (ctl model NAME); alone, show it and those offered", (*Shell).model},
		{"backend", "[NAME]", "set the backend (ctl backend NAME); alone, show it and the backends", (*Shell).backend},
		{"usage", "", "token counts and context use (usage, ctxsz)", show("usage", "ctxsz")},
		{"cost", "", "cost of the last turn and of the session (cost)", show("cost")},
		{"new", "", "start a new session in this directory", (*Shell).newSession},
		{"sessions", "", "list the sessions (s/idx); * marks this one", (*Shell).sessions},
		{"switch", "SESSION", "use another session: an id, a name or the end of an id", (*Shell).switchTo},
		{"q", "TEXT", "queue TEXT for after the current turn (fifo.in)", (*Shell).queue},
		{"exit", "", "leave (also Ctrl-D, or Ctrl-C twice); the session stays", func(*Shell, string) bool { return true }},
	}
}

// command runs a /line; it reports whether the user is leaving.
func (sh *Shell) command(line string) bool {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	for _, c := range commands {
		if c.name == name {
			return c.run(sh, arg)
		}
	}
	if name == "quit" {
		return true
	}
	sh.errorf("unknown command /%s; /help lists them", name)
	return false
}

func (sh *Shell) help(string) bool {
	var b strings.Builder
	b.WriteString("Type a prompt to ask; the answer streams as it comes. Ctrl-C stops a turn.\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  /%-16s %s\n", strings.TrimSpace(c.name+" "+c.args), c.doc)
	}
	b.WriteString("  !COMMAND          run COMMAND with sh in the session's directory, with the\n")
	b.WriteString("                    non-secret variables of its env file (secret values never\n")
	b.WriteString("                    come through the tree)\n")
	b.WriteString("  //TEXT            ask /TEXT\n")
	b.WriteString("  (empty line)      follow a turn running in this session\n")
	sh.r.newline()
	sh.r.out(b.String())
	return false
}

// ctl makes a command that writes one control message.
func ctl(msg string) func(*Shell, string) bool {
	return func(sh *Shell, arg string) bool {
		if arg != "" {
			sh.errorf("/%s takes no argument", msg)
			return false
		}
		if err := sh.t.write(msg+"\n", "s", sh.id, "ctl"); err != nil {
			sh.errorf("%v", err)
		}
		return false
	}
}

// show makes a command that prints session files.
func show(files ...string) func(*Shell, string) bool {
	return func(sh *Shell, _ string) bool {
		sh.r.newline()
		for _, f := range files {
			text, err := sh.t.read("s", sh.id, f)
			if err != nil {
				sh.errorf("%v", err)
				return false
			}
			if f == "ctxsz" {
				text = "context " + text
			}
			sh.r.out(text)
		}
		return false
	}
}

func (sh *Shell) compact(arg string) bool {
	if ctl("compact")(sh, arg) {
		return true
	}
	sh.follow() // compaction is a turn of its own
	return false
}

func (sh *Shell) model(arg string) bool {
	if arg != "" {
		if err := sh.t.write("model "+arg+"\n", "s", sh.id, "ctl"); err != nil {
			sh.errorf("%v", err)
		} else {
			sh.note("model %s", arg)
		}
		return false
	}
	c := kv(mustRead(sh.t, "s", sh.id, "cfg"), "=")
	sh.r.newline()
	sh.r.out("model " + orDefault(c["model"]) + "\n")
	if ms, err := sh.t.read("s", sh.id, "models"); err != nil {
		sh.errorf("models: %v", err)
	} else if strings.TrimSpace(ms) != "" {
		sh.r.out("offered: " + strings.Join(strings.Fields(ms), " ") + "\n")
	}
	return false
}

func (sh *Shell) backend(arg string) bool {
	if arg != "" {
		if err := sh.t.write("backend "+arg+"\n", "s", sh.id, "ctl"); err != nil {
			sh.errorf("%v", err)
		} else {
			sh.note("backend %s", arg)
		}
		return false
	}
	c := kv(mustRead(sh.t, "s", sh.id, "cfg"), "=")
	sh.r.newline()
	sh.r.out("backend " + orDefault(c["backend"]) + "\n")
	sh.r.out(mustRead(sh.t, "backends"))
	return false
}

func (sh *Shell) newSession(string) bool {
	id, err := sh.t.newSession(sh.o.Cwd, sh.o.Model, sh.o.Backend)
	if err != nil {
		sh.errorf("%v", err)
		return false
	}
	if err := sh.attach(id, true); err != nil {
		sh.errorf("%v", err)
	}
	return false
}

func (sh *Shell) sessions(string) bool {
	es, err := sh.t.sessions()
	if err != nil {
		sh.errorf("%v", err)
		return false
	}
	sh.r.newline()
	for _, e := range es {
		mark := " "
		if e.id == sh.id {
			mark = "*"
		}
		sh.r.out(fmt.Sprintf("%s %s  %-8s %-10s %s\n", mark, e.id, e.state, e.model, e.cwd))
	}
	return false
}

func (sh *Shell) switchTo(arg string) bool {
	if arg == "" {
		sh.errorf("usage: /switch SESSION")
		return false
	}
	id, err := sh.t.resolve(arg)
	if err == nil {
		sh.catchUp()
		err = sh.attach(id, false)
	}
	if err != nil {
		sh.errorf("%v", err)
	}
	return false
}

// queue writes to fifo.in. On a busy session the text waits its turn and
// the shell goes on; on an idle one it starts at once and is followed.
func (sh *Shell) queue(arg string) bool {
	if arg == "" {
		sh.errorf("usage: /q TEXT")
		return false
	}
	sh.catchUp()
	idle := !busy(mustRead(sh.t, "s", sh.id, "state"))
	if err := sh.t.write(arg+"\n", "s", sh.id, "fifo.in"); err != nil {
		sh.errorf("%v", err)
		return false
	}
	if idle {
		sh.follow()
		return false
	}
	n := strings.Count(mustRead(sh.t, "s", sh.id, "queue"), "\n")
	sh.note("queued; %d waiting (an empty line follows the turn)", n)
	return false
}

func (sh *Shell) resume(arg string) bool {
	if arg != "" {
		sh.errorf("/resume takes no argument")
		return false
	}
	if err := sh.t.write("resume\n", "s", sh.id, "ctl"); err != nil {
		sh.errorf("%v", err)
		return false
	}
	sh.follow()
	return false
}
