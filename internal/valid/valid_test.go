package valid

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"ollie.dev/ollie/internal/errs"
)

func TestText(t *testing.T) {
	for _, c := range []struct {
		in         string
		ok, prefix bool
		want       string
	}{
		{"plain text\n", true, true, ""},
		{"héllo wörld ✓ 🎉", true, true, ""},
		{"", true, true, ""},
		{"a\x00b", false, false, "NUL byte at offset 1"},
		{"ab\xff", false, false, "byte 0xff at offset 2"},
		{"\xc3\x28", false, false, "offset 0"},       // a lead byte then ASCII
		{"ok \xe2\x9c", false, true, "offset 3"},     // ✓ cut after two of three bytes
		{"ok \xf0\x9f\x8e", false, true, "offset 3"}, // 🎉 cut after three of four
		{"\xed\xa0\x80", false, false, "offset 0"},   // a surrogate is not UTF-8
		{"\xe2\x9c x", false, false, "offset 0"},     // cut, then more: wrong already
	} {
		err := Text("env", []byte(c.in))
		if (err == nil) != c.ok {
			t.Errorf("Text(%q) = %v, want ok=%v", c.in, err, c.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "bad request: env: ") || !errs.Is(err, errs.Invalid)) {
			t.Errorf("Text(%q) = %q, want env and %q", c.in, err, c.want)
		}
		if perr := TextPrefix("env", []byte(c.in)); (perr == nil) != c.prefix {
			t.Errorf("TextPrefix(%q) = %v, want ok=%v", c.in, perr, c.prefix)
		}
	}
}

func TestInt(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{{"1", true}, {"256", true}, {"+7", true}, {"0", false}, {"257", false}, {"1e3", false}, {"2 junk", false},
		{" 2", false}, {"0x10", false}, {"", false}, {"1_0", false}, {"99999999999999999999", false}, {"-1", false}} {
		n, err := Int("parallel", c.in, 1, 256)
		if (err == nil) != c.ok {
			t.Errorf("Int(%q) = %d, %v; want ok=%v", c.in, n, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "parallel=") || err != nil && !strings.Contains(err.Error(), "from 1 to 256") {
			t.Errorf("Int(%q) error %q lacks the key or the range", c.in, err)
		}
	}
}

func TestFloat(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{{"0", true}, {"0.7", true}, {"2", true}, {"1e-1", true}, {".5", true}, {"2.1", false}, {"-0.1", false},
		{"NaN", false}, {"nan", false}, {"Inf", false}, {"0x1p-2", false}, {"0.5 hot", false}, {"", false}, {"1_0", false}} {
		f, err := Float("temperature", c.in, 0, 2)
		if (err == nil) != c.ok {
			t.Errorf("Float(%q) = %v, %v; want ok=%v", c.in, f, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "temperature=") {
			t.Errorf("Float(%q) error %q lacks the key", c.in, err)
		}
	}
	if _, err := Float("temperature", "3", 0, 2); err == nil || !strings.Contains(err.Error(), "from 0 to 2") {
		t.Errorf("Float out of range: %v", err)
	}
}

// The value in an error is quoted when it is not plain, so the error
// itself stays one line of text.
func TestErrorQuotesValue(t *testing.T) {
	_, err := Int("parallel", "2\n\x00junk", 1, 256)
	if err == nil || strings.ContainsAny(err.Error(), "\n\x00") {
		t.Errorf("Int error = %q", err)
	}
}

// FuzzText checks Text against the standard library's notion of UTF-8,
// and that TextPrefix never refuses a prefix of what it accepted.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "abc", "a\x00", "\xff", "✓", "\xe2\x9c", "🎉\xf0\x9f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
		if got := Text("f", b) == nil; got != want {
			t.Fatalf("Text(%q) ok=%v, want %v", b, got, want)
		}
		if want && TextPrefix("f", b) != nil {
			t.Fatalf("TextPrefix refused valid text %q", b)
		}
		if TextPrefix("f", b) == nil {
			for i := range b {
				if TextPrefix("f", b[:i]) != nil {
					t.Fatalf("TextPrefix took %q but refused its prefix %q", b, b[:i])
				}
			}
		}
	})
}
