package e2e_test

import (
	"os"
	"os/exec"
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
		case p := <-e.runner.Started:
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
	// A child forked and exec'd while a message is half written has the
	// descriptor close-on-exec, and that close is not the writer's: the
	// message is not cut (os/exec here; a shell running ls alike).
	e.started()
	f, err := os.OpenFile(x+"/prompt", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("part one\n")
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	e.sh(`exec 3>` + x + `/prompt; ls ` + x + ` > /dev/null; exec 3>&-`) // a child that inherits a descriptor and exits
	f.WriteString("part two")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	e.sh(`cat ` + x + `/wait > /dev/null`)
	if got := e.started(); len(got) != 1 || got[0] != "part one\npart two" {
		t.Errorf("turns began with %q, want one with both parts", got)
	}
}

// badWrite is bad input written by a program that must fail, in its own
// process, with an errno whose text is want.
type badWrite struct {
	what, script, want string
}

// Bad input fails in the writer's own process: at the write(2) that made
// it bad when the daemon can see it then, else at the close(2).
func TestBadInputFailsTheWriter(t *testing.T) {
	e := start(t)
	x := e.newSession()
	e.sh(`printf 'old plan' > ` + x + `/plan`)
	py := func(file, data string) string {
		return `python3 -c 'import sys; f = open(sys.argv[1], "wb", buffering=0); f.write(` + data + `); f.close()' ` + file
	}
	bad := []badWrite{
		{"ctl without newline", `printf 'kill now' > $X/ctl`, "Invalid argument"},
		{"ctl unknown", `echo bogus > $X/ctl`, "Invalid argument"},
		{"ctl second line bad", `printf 'save\nbogus\n' > $X/ctl`, "Invalid argument"},
		{"ctl python", py("$X/ctl", `b"kill now"`), "Invalid argument"},
		{"prompt not UTF-8, bash", `printf 'ok \xff' > $X/prompt`, "Invalid argument"},
		// dash says "I/O error" whatever the errno.
		{"prompt not UTF-8, dash", `dash -c "printf 'ok \377' > $X/prompt"`, "I/O error"},
		{"prompt not UTF-8, python", py("$X/prompt", `b"ok \xc3\x28"`), "Invalid argument"},
		{"prompt cut UTF-8, python", py("$X/prompt", `b"ok \xc3"`), "Invalid argument"},
		{"prompt too large, tr", `head -c 5000000 /dev/zero | tr '\0' a > $X/prompt`, "File too large"},
		{"prompt too large, dd", `head -c 5000000 /dev/zero | dd of=$X/prompt bs=64k status=none`, "File too large"},
		{"prompt too large, python", py("$X/prompt", `b"a" * 5000000`), "File too large"},
		{"prompt blank, python", py("$X/prompt", `b"\n\n"`), "Invalid argument"},
		{"plan too large", `head -c 300000 /dev/zero | tr '\0' p > $X/plan`, "File too large"},
		{"agent ill-formed so far, cat", `printf '{"description":' | cat > $M/a/x.json`, "Invalid argument"},
		{"agent ill-formed so far, dd", `printf '{"description":' | dd of=$M/a/x.json status=none`, "Invalid argument"},
		{"agent ill-formed so far, python", py("$M/a/x.json", `b"{\"description\":"`), "Invalid argument"},
		{"agent garbage", `echo garbage > $M/a/x.json`, "Invalid argument"},
		{"cfg unknown key, second line", `printf 'temperature=0.5\nbogus=1\n' > $X/cfg`, "Invalid argument"},
		{"s/new unknown key", `printf 'cwd=/\nbogus=1\n' > $M/s/new`, "Invalid argument"},
		{"s/new without cwd, python", py("$M/s/new", `b"name=nocwd"`), "Invalid argument"},
		{"b/new bad head", `printf 'bogus=1\n---\nhi' > $M/b/new`, "Invalid argument"},
	}
	e.started()
	for _, b := range bad {
		out, err := e.try(`X=` + x + `; ` + b.script)
		if err == nil || !strings.Contains(out, b.want) {
			t.Errorf("%s: %v %q; want a failure saying %q", b.what, err, out, b.want)
		}
	}
	if got := e.started(); len(got) != 0 {
		t.Errorf("bad prompts began turns: %q", got)
	}
	if got := e.sh(`cat ` + x + `/plan`); got != "old plan" {
		t.Errorf("plan after a refused write = %q", got)
	}
	if _, ok := e.disk(e.cfg.ConfigDir, "a/x.json"); ok {
		t.Errorf("a/x.json left on disk after refused writes")
	}
	e.sh(`test ! -e $M/s/nocwd`)
	// ctl applies each command of a write, in order.
	e.sh(`printf 'save\nclear' > ` + x + `/ctl`)
}

// A long prompt (what the README recommends: cat notes.txt > prompt) is
// one prompt whatever its size up to the limit, sent in many writes.
func TestLongPrompt(t *testing.T) {
	e := start(t)
	x := e.newSession()
	for _, n := range []int{100 << 10, 3 << 20} {
		text := "block " + strings.Repeat("long prompt line\n", n/17)
		e.prepare(text)
		e.started()
		for _, w := range []string{`cat $W/in > "$F"`, `python3 -c 'import sys; open(sys.argv[2], "w").write(open(sys.argv[1]).read())' $W/in "$F"`, `dd if=$W/in of="$F" bs=64k status=none`} {
			st := e.sh(`export F=` + x + `/prompt; ` + w + `; cat ` + x + `/state; echo stop > ` + x + `/ctl; cat ` + x + `/wait >/dev/null`)
			got := e.started()
			if st != "running\n" || len(got) != 1 || got[0] != text {
				t.Errorf("%d bytes by %s: state %q, %d turns began (first %d bytes)", len(text), w, st, len(got), len(strings.Join(got, "")))
			}
		}
	}
}

// The plan's size is true (NAMESPACE rule 9), and a read after a commit
// sees the new plan, not the kernel's cached pages of the old.
func TestPlanSize(t *testing.T) {
	e := start(t)
	x := e.newSession()
	e.sh(`test ! -s ` + x + `/plan; printf 'step one' > ` + x + `/plan; test -s ` + x + `/plan; test "$(stat -c %s ` + x + `/plan)" = 8`)
	e.sh(`test "$(cat ` + x + `/plan)" = "step one"; printf 'step two!' > ` + x + `/plan; test "$(cat ` + x + `/plan)" = "step two!"`)
	e.sh(`echo more >> ` + x + `/plan; test "$(cat ` + x + `/plan)" = "step two!more"`)
}
