package ns

import (
	"reflect"
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
