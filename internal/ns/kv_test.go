package ns

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestParseKV(t *testing.T) {
	keys := []string{"cwd", "name", "model"}
	for _, c := range []struct {
		in   string
		want map[string]string
	}{
		{"cwd=/a b/c name=x\n", map[string]string{"cwd": "/a b/c", "name": "x"}},
		{"cwd=/x\nmodel=some model:7b\n", map[string]string{"cwd": "/x", "model": "some model:7b"}},
		{"# comment\n\n  name=y  \n", map[string]string{"name": "y"}},
		{"name=", map[string]string{"name": ""}},
	} {
		got, err := parseKV(c.in, keys)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseKV(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"garbage", "want key=value"},
		{"cwd=/x colour=red", "unknown key"},
		{"=value", "want key=value"},
		{"bad key=1", "want key=value"},
	} {
		if _, err := parseKV(c.in, keys); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseKV(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

// nextKey finds what the regular expression it replaced found, on short
// texts of the characters that matter to it and some that do not.
func TestNextKeyAsTheRegexp(t *testing.T) {
	re := nextKeyRE
	const alphabet = " \t\t  az_09=A/.-\n\x00é"
	r := rand.New(rand.NewPCG(1, 2))
	texts := []string{"", " ", "\t", "=", " a=", "a b=", " b =", " _=", " 9=", " a9_=x", "x  y=1 z", "x \t "}
	for range 200000 {
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		want := re.FindStringIndex(s + " ")[0]
		if got := nextKey(s); got != want {
			t.Fatalf("nextKey(%q) = %d, the regexp %d", s, got, want)
		}
	}
}

// nextKeyRE is the regular expression nextKey replaced.
var nextKeyRE = regexp.MustCompile(`[ \t]+[a-z_][a-z0-9_]*=|[ \t]*$`)

// FuzzParseKV: settings as a writer of s/new, cfg or b/new may send them.
// parseKV does not panic; what it accepts has only known keys, each value
// one line without blanks around it; and nextKey agrees with the regular
// expression it replaced on every line.
func FuzzParseKV(f *testing.F) {
	for _, s := range []string{"cwd=/a b/c name=x\n", "# c\n\n  name=y  \n", "name=", "bad key=1", "cwd=/x\tmodel=m:7b agent= a", "name=y \t\n", "x \t "} {
		f.Add(s)
	}
	keys := []string{"cwd", "name", "model", "agent"}
	f.Fuzz(func(t *testing.T, text string) {
		for _, line := range strings.Split(text, "\n") {
			if got, want := nextKey(line), nextKeyRE.FindStringIndex(line + " ")[0]; got != want {
				t.Fatalf("nextKey(%q) = %d, the regexp %d", line, got, want)
			}
		}
		kv, err := parseKV(text, keys)
		if err != nil {
			return
		}
		for k, v := range kv {
			if !contains(keys, k) {
				t.Fatalf("parseKV(%q) accepted key %q", text, k)
			}
			if strings.ContainsRune(v, '\n') || v != strings.TrimSpace(v) {
				t.Fatalf("parseKV(%q): %s=%q", text, k, v)
			}
		}
	})
}
