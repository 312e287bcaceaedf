package batch_test

import (
	"strings"
	"testing"

	"ollie.dev/ollie/internal/batch"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ns"
)

func TestParseSpec(t *testing.T) {
	sp, err := batch.ParseSpec("agent=a\nparallel=3\ncwd=/my dir\n---\nsay hi\n", ns.ParseJobKV)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Agent != "a" || sp.Parallel != 3 || sp.Cwd != "/my dir" || sp.Prompt != "say hi\n" {
		t.Errorf("spec = %+v", sp)
	}
	if sp, err := batch.ParseSpec("---\njust a prompt\n", ns.ParseJobKV); err != nil || sp.Parallel != 1 || sp.Prompt != "just a prompt\n" {
		t.Errorf("spec without settings = %+v, %v", sp, err)
	}
}

// Every bad spec fails with an error that names the key and what is
// allowed; numbers are read strictly, never up to the first non-digit.
func TestParseSpecErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"parallel=1e3\n---\nx\n", "parallel=1e3: want a whole number from 1 to 256"},
		{"parallel=2 junk\n---\nx\n", "parallel=2 junk: want a whole number from 1 to 256"},
		{"parallel=0\n---\nx\n", "from 1 to 256"},
		{"parallel=257\n---\nx\n", "from 1 to 256"},
		{"parallel=0x10\n---\nx\n", "from 1 to 256"},
		{"parallel=-1\n---\nx\n", "from 1 to 256"},
		{"parallel= 4x\n---\nx\n", "from 1 to 256"},
		{"agent=a\n---\n\n", "no prompt"},
		{"agent=a\nno separator\n", "a line ---"},
		{"bogus=1\n---\nx\n", "unknown key"},
		{"agent=a\n---\nhello\x00world\n", "job spec: NUL byte at offset"},
		{"agent=\xff\n---\nx\n", "job spec: not UTF-8 text"},
		{"---\nbad \xe2\x9c\n", "not UTF-8"},
	} {
		_, err := batch.ParseSpec(c.in, ns.ParseJobKV)
		if err == nil || !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q) = %v, want Invalid with %q", c.in, err, c.want)
		}
	}
}

// FuzzParseSpec: a spec is untrusted (a stage writes spawn); whatever it
// holds, parsing returns a spec in range or an Invalid error, and never
// panics.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"agent=a\nparallel=3\n---\nhi\n", "---\nx", "parallel=1e3\n---\nx\n", "cwd=/a b model=m\n---\n\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := batch.ParseSpec(s, ns.ParseJobKV)
		if err != nil {
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("ParseSpec(%q) = %v: not Invalid", s, err)
			}
			return
		}
		if sp.Parallel < 1 || sp.Parallel > batch.MaxParallel || strings.TrimSpace(sp.Prompt) == "" {
			t.Fatalf("ParseSpec(%q) = %+v", s, sp)
		}
	})
}
