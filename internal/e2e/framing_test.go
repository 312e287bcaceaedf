package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The framing of NAMESPACE rule 1, through the real mount, each writer a
// real program: one open-write-close is one message however the writer
// splits it, a message without a final newline is sent, and bad input
// fails in the writer's own process.

// writer is a program that copies the file $W/in to "$F", in its own way.
type writer struct {
	name   string
	script string
}

var writers = []writer{
	// A shell's printf and echo write a line at a time: one write each.
	{"bash", `bash $W/lines.sh`},
	{"dash", `dash $W/lines.sh`},
	{"python3", `python3 -c '
import sys
f = open(sys.argv[2], "wb", buffering=0)
for l in open(sys.argv[1], "rb").read().splitlines(True):
    f.write(l)
f.close()' $W/in "$F"`},
	{"vim", `vim -es -u NONE -i NONE -N --cmd 'set binary nobackup nowritebackup noswapfile' -c 'w! '"$F" -c 'q!' $W/in`},
	{"cat", `cat $W/in > "$F"`},
	{"tee", `tee "$F" < $W/in > /dev/null`},
	{"dd", `dd if=$W/in of="$F" bs=7 status=none`},
}

// prepare writes text to $W/in, and $W/lines.sh: a printf per line.
func (e *env) prepare(text string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.work, "in"), []byte(text), 0644); err != nil {
		e.t.Fatal(err)
	}
	var sh strings.Builder
	sh.WriteString("{\n")
	lines := strings.SplitAfter(text, "\n")
	for _, l := range lines {
		if strings.Contains(l, "'") {
			e.t.Fatalf("test text %q has a quote", l)
		}
		if l != "" {
			sh.WriteString("printf '%s' '" + l + "'\n")
		}
	}
	sh.WriteString("} > \"$F\"\n")
	if err := os.WriteFile(filepath.Join(e.work, "lines.sh"), []byte(sh.String()), 0644); err != nil {
		e.t.Fatal(err)
	}
}

// started returns the prompts of the turns begun so far.
func (e *env) started() []string {
	var got []string
	for {
		select {
		case p := <-e.runner.started:
			got = append(got, p)
		default:
			return got
		}
	}
}

// A multi-line message without a final newline, written by each program
// into each message file, arrives whole and once; a prompt's state is not
// idle when the writer's close has returned.
func TestEveryWriterOneMessage(t *testing.T) {
	e := start(t)
	x := e.newSession()
	for i, w := range writers {
		run := func(file, text string) string {
			t.Helper()
			e.prepare(text)
			return e.sh(`export F=` + file + `; ` + w.script)
		}
		{
			e.started()
			for _, f := range []string{"prompt", "fifo.in"} {
				text := "block by " + w.name + "\nline two\nline three"
				e.prepare(text)
				st := e.sh(`export F=` + x + `/` + f + `; ` + w.script + `; cat ` + x + `/state; echo stop > ` + x + `/ctl; cat ` + x + `/wait >/dev/null`)
				if st != "running\n" {
					t.Errorf("%s to %s: state after close = %q, want running", w.name, f, st)
				}
				if got := e.started(); len(got) != 1 || got[0] != text {
					t.Errorf("%s to %s: turns began with %q, want one with %q", w.name, f, got, text)
				}
			}

			name := "n-" + w.name
			run(e.mnt+"/s/new", "cwd="+e.work+"\nname="+name)
			e.sh(`test -d $M/s/` + name)

			for _, f := range []string{e.mnt + "/b/new", x + "/spawn"} {
				job := "job by " + w.name + "\nline two"
				run(f, "cwd="+e.work+"\n---\n"+job)
				deadline := time.Now().Add(hangTimeout)
				var got []string
				for len(got) == 0 && time.Now().Before(deadline) {
					got = e.started()
					time.Sleep(10 * time.Millisecond)
				}
				if len(got) != 1 || strings.TrimSpace(got[0]) != job {
					t.Errorf("%s to %s: jobs began with %q, want one with %q", w.name, f, got, job)
				}
			}

			mt := strconv.Itoa(100 + i)
			run(x+"/cfg", "temperature=0.5\nmax_tokens="+mt)
			if got := e.sh(`cat ` + x + `/cfg`); !strings.Contains(got, "\nmax_tokens="+mt+"\n") || !strings.Contains(got, "\ntemperature=0.5\n") {
				t.Errorf("%s to cfg: cfg is\n%s", w.name, got)
			}
			key := "K_" + strings.ToUpper(w.name)
			run(x+"/env", key+"=one\n"+key+"2=two words")
			if got := e.sh(`cat ` + x + `/env`); !strings.Contains(got, key+"=one\n") || !strings.Contains(got, key+"2=two words\n") {
				t.Errorf("%s to env: env is\n%s", w.name, got)
			}

			docs := map[string]string{
				x + "/plan":                        "plan by " + w.name + "\nline two\nline three",
				e.mnt + "/a/w-" + w.name + ".json": "{\n\"description\": \"by " + w.name + "\",\n\"prompt\": [{\"file\": \"base.md\"}]\n}",
				e.mnt + "/sk/w-" + w.name + ".md":  "---\nname: w-" + w.name + "\ndescription: by " + w.name + "\n---\nbody",
				e.mnt + "/t/w-" + w.name:           "#!/bin/sh\n# description: by " + w.name + "\necho hi",
				e.mnt + "/m/w-" + w.name:           "note by " + w.name + "\nline two\nline three",
			}
			for f, text := range docs {
				run(f, text)
				if got, err := os.ReadFile(f); err != nil || string(got) != text {
					t.Errorf("%s to %s: read back %q, %v; want %q", w.name, f, got, err, text)
				}
			}
		}
	}
}

// `printf 'block %d' $i > prompt; cat state` never reads idle.
func TestStateAfterClose(t *testing.T) {
	e := start(t)
	x := e.newSession()
	idle := 0
	for i := range 30 {
		st := e.sh(`printf 'block %d' ` + strconv.Itoa(i) + ` > ` + x + `/prompt; cat ` + x + `/state; echo stop > ` + x + `/ctl; cat ` + x + `/wait > /dev/null`)
		if st != "running\n" {
			idle++
			t.Errorf("try %d: state after the close = %q", i, st)
		}
	}
	t.Logf("state after close: %d of 30 not running", idle)
}

// Each close(2) of a descriptor of an open ends a message: a shell that
// dups a descriptor for each echo sends one message per echo, and the
// last close, with nothing written since, sends nothing.
func TestDupedDescriptors(t *testing.T) {
	e := start(t)
	x := e.newSession()
	e.started()
	e.sh(`exec 3>` + x + `/prompt; echo a >&3; echo b >&3; exec 3>&-; cat ` + x + `/wait >/dev/null`)
	deadline := time.Now().Add(hangTimeout)
	var got []string
	for len(got) < 2 && time.Now().Before(deadline) {
		got = append(got, e.started()...)
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Join(got, "|") != "a\n|b\n" {
		t.Errorf("turns began with %q, want a and b", got)
	}
	// A forked child writing to the descriptor it inherited commits its
	// own writes when it exits.
	e.sh(`exec 3>` + x + `/prompt; (printf 'from the child' >&3); exec 3>&-; cat ` + x + `/wait >/dev/null`)
	if got := e.sh(`cat ` + x + `/prompt.prev`); got != "from the child" {
		t.Errorf("prompt.prev = %q", got)
	}
}
