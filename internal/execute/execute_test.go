package execute

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"ollie.dev/ollie/internal/testutil"
)

func TestLanguages(t *testing.T) {
	f := newFixture(t)
	input := Stage{Language: "sh", Code: `printf '{"n":41}\n'`}
	for _, tc := range []struct {
		lang, code, want string
	}{
		{"bash", `read l; echo "bash ${l}"`, "bash {\"n\":41}\n"},
		{"sh", `read l; echo "sh $l"`, "sh {\"n\":41}\n"},
		{"python3", "import json,sys\nprint(json.load(sys.stdin)['n']+1)", "42\n"},
		{"perl", `while(<STDIN>){ /(\d+)/; print $1+1, "\n" }`, "42\n"},
		{"awk", `{ gsub(/[^0-9]/, ""); print $0+1 }`, "42\n"},
		{"sed", `s/[^0-9]//g`, "41\n"},
		{"jq", `.n + 1`, "42\n"},
		{versionedPython(t), "print('by name')", "by name\n"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			f := f.with(t)
			if _, ok := lookPath(tc.lang, f.sb.Path); !ok {
				testutil.Require(t, tc.lang)
			}
			res := f.run(steps(input, Stage{Language: tc.lang, Code: tc.code}))
			f.wantOK(res, tc.want)
		})
	}
}

// versionedPython is the versioned name of Debian's python3 (python3.11
// on Debian 12): a language given by a name that is not a plain one.
func versionedPython(t *testing.T) string {
	p, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		testutil.Require(t, "/usr/bin/python3")
		return "python3"
	}
	return filepath.Base(p)
}

func TestPipelineCarriesStdin(t *testing.T) {
	f := newFixture(t)
	res := f.run(steps(
		bash(`seq 1 5`),
		Stage{Language: "awk", Code: `{ s += $1; print } END { print "sum", s }`},
		Stage{Language: "python3", Code: "import sys\nprint(len(sys.stdin.readlines()), 'lines')"},
	))
	f.wantOK(res, "6 lines\n")
}

// TestParallelKeepsOrder makes the first branch finish last: it waits
// until the other two have written their output and made a file each, so
// it also shows that the branches run at once. The output is still in
// the order of the branches.
func TestParallelKeepsOrder(t *testing.T) {
	f := newFixture(t)
	res := f.run(steps(
		bash(`printf 'x\ny\n'`),
		Stage{Parallel: []Stage{
			bash(`for i in $(seq 3000); do [ -e py.done ] && [ -e wc.done ] && break; sleep 0.01; done
				[ -e py.done ] && [ -e wc.done ] || { echo the other branches never finished >&2; exit 1; }
				sed 's/^/last /'`),
			{Language: "python3", Code: "import sys\nfor l in sys.stdin: print('py', l.strip())\nsys.stdout.flush()\nopen('py.done', 'w').close()"},
			{Parallel: []Stage{bash(`wc -l; : > wc.done`)}},
		}},
		Stage{Language: "sh", Code: `cat`},
	))
	f.wantOK(res, "last x\nlast y\npy x\npy y\n2\n")
}

func TestTools(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.tools, "shout"), "#!/bin/bash\n# description: upper-case stdin\ntr a-z A-Z; echo \"args: $*\"\n")
	write(t, filepath.Join(f.tools, "count.py"), "#!/usr/bin/env python3\nimport sys\nprint(sys.argv[1:], len(sys.stdin.read()))\n")
	os.Chmod(filepath.Join(f.tools, "count.py"), 0o644) // a tool need not be executable
	write(t, filepath.Join(f.tools, "plain"), "echo no interpreter line\n")
	write(t, filepath.Join(f.tools, "ruby-tool"), "#!/no/such/ruby\nputs 1\n")
	os.Symlink(f.sshKey, filepath.Join(f.tools, "linked"))

	res := f.run(steps(bash(`echo hello`), Stage{Tool: "shout", Args: []string{"a b", "c"}}))
	f.wantOK(res, "HELLO\nargs: a b c\n")
	res = f.run(steps(bash(`printf 12345`), Stage{Tool: "count.py", Args: []string{"-x"}}))
	f.wantOK(res, "['-x'] 5\n")

	for _, tc := range []struct{ tool, want string }{
		{"nosuch", "no tool"},
		{"../shout", "bad tool name"},
		{"plain", "no #! line"},
		{"ruby-tool", "interpreter /no/such/ruby not found"},
		{"linked", "no tool"},
	} {
		_, err := f.executor().Run(t.Context(), f.spec(), []byte(steps(Stage{Tool: tc.tool})))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tool %s: error %v, want %q", tc.tool, err, tc.want)
		}
	}
}

func TestMixedPipeline(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.tools, "rev"), "#!/usr/bin/perl\nwhile (<STDIN>) { chomp; print scalar reverse($_), \"\\n\" }\n")
	res := f.run(steps(
		Stage{Language: "python3", Code: "print('abc'); print('def')"},
		Stage{Parallel: []Stage{{Tool: "rev"}, bash(`tr a-z A-Z`)}},
		Stage{Language: "jq", Code: `.`},
	))
	// jq reads no JSON here: the failure must name stage 3 and jq's stderr.
	if !res.Failed || res.Stage != "3" || res.Label != "jq" || res.ExitCode == 0 || res.Stderr == "" {
		t.Fatalf("want stage 3 (jq) to fail with its stderr, got %+v", res)
	}
	res = f.run(steps(
		Stage{Language: "python3", Code: "print('abc'); print('def')"},
		Stage{Parallel: []Stage{{Tool: "rev"}, bash(`tr a-z A-Z`)}},
		bash(`sort`),
	))
	f.wantOK(res, "ABC\nDEF\ncba\nfed\n")
}

func TestFailureNamesStage(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.cwd, "ran")
	res := f.run(steps(
		bash(`echo one`),
		Stage{Language: "python3", Code: "import sys\nprint('partial')\nsys.stderr.write('it broke\\n')\nsys.exit(3)"},
		bash(`touch `+marker),
	))
	if !res.Failed || res.Stage != "2" || res.ExitCode != 3 || !strings.Contains(res.Stderr, "it broke") {
		t.Fatalf("got %+v", res)
	}
	if string(res.Output) != "partial\n" {
		t.Errorf("output %q, want the failing stage's partial stdout", res.Output)
	}
	if !strings.Contains(res.String(), "error: stage 2 (python3) exited with status 3") {
		t.Errorf("text:\n%s", res)
	}
	if exists(marker) {
		t.Error("a stage after the failing one ran")
	}
}

func TestBinaryOutput(t *testing.T) {
	f := newFixture(t)
	want := bytes.Repeat(func() []byte {
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}(), 4096)
	gen := Stage{Language: "python3", Code: "import sys\nsys.stdout.buffer.write(bytes(range(256))*4096)"}
	res := f.run(steps(gen))
	if !res.Binary || res.Size != int64(len(want)) || res.Saved == "" {
		t.Fatalf("got %+v", res)
	}
	saved, err := os.ReadFile(res.Saved)
	if err != nil || !bytes.Equal(saved, want) {
		t.Fatalf("saved output differs (%v)", err)
	}
	if !strings.Contains(res.String(), "binary output") {
		t.Errorf("text: %s", res)
	}
	// Binary data passes between stages unchanged.
	res = f.run(steps(gen, bash(`sha256sum | cut -d' ' -f1`)))
	f.wantOK(res, fmt.Sprintf("%x\n", sha256.Sum256(want)))
}

func TestHugeOutputIsCut(t *testing.T) {
	f := newFixture(t)
	f.sb.MaxResult = 4096
	// 24 MB of two-byte runes, so any cut risks splitting one.
	res := f.run(steps(bash(`yes 'héllo wörld ünïcödé' | head -c 24000001`), bash(`cat`)))
	if res.Failed || res.Binary || res.Size != 24000001 {
		t.Fatalf("got Failed=%v Binary=%v Size=%d", res.Failed, res.Binary, res.Size)
	}
	if !utf8.Valid(res.Output) || len(res.Output) > 4096+200 {
		t.Fatalf("output not cut cleanly: %d bytes, valid %v", len(res.Output), utf8.Valid(res.Output))
	}
	if !strings.HasPrefix(string(res.Output), "héllo wörld") || !strings.Contains(string(res.Output), "bytes cut; the full output is in "+res.Saved) {
		t.Fatalf("output: %s", res.Output)
	}
	fi, err := os.Stat(res.Saved)
	if err != nil || fi.Size() != res.Size || filepath.Dir(res.Saved) != f.tmp {
		t.Fatalf("saved %s: %v %v", res.Saved, fi, err)
	}
}

func TestStageOutputLimit(t *testing.T) {
	f := newFixture(t)
	f.sb.MaxStageOutputMB = 1
	res := f.run(steps(bash(`head -c 3000000 /dev/zero | tr '\0' x`)))
	if !res.Failed || !strings.Contains(res.Reason, "more output than the limit") {
		t.Fatalf("got %+v", res.Reason)
	}
}

func TestEnvironment(t *testing.T) {
	f := newFixture(t)
	res := f.run(code("bash", `env; pwd`))
	out := string(res.Output)
	for _, want := range []string{"LANG=C.UTF-8", "SESSION_VAR=hello", "HOME=" + f.tmp, "TMPDIR=" + f.tmp, "\n" + f.cwd + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "OPENAI_API_KEY") || strings.Contains(out, fakeToken) {
		t.Fatalf("the daemon's key leaked into the stage environment:\n%s", out)
	}
}
