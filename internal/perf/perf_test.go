package perf

import (
	"os"
	"testing"

	"ollie.dev/ollie/internal/testutil"
)

func TestMain(m *testing.M) { testutil.SandboxMain(m) }

func newEnv(t testing.TB) *Env {
	exe, _ := os.Executable()
	e, err := NewEnv(Options{Helper: exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestMeasuresRun checks every measurement works on a small scale; the
// numbers themselves come from `ollie bench` and BenchmarkTurn.
func TestMeasuresRun(t *testing.T) {
	e := newEnv(t)
	if st, ids, err := e.NewSessions(3); err != nil || len(ids) != 3 || st.N != 3 {
		t.Fatalf("NewSessions: %v %v", st, err)
	}
	tr, err := e.Turns(3)
	if err != nil || tr.Total.N != 3 || tr.Tool.Mean <= 0 || tr.Overhead.Mean <= 0 {
		t.Fatalf("Turns: %+v %v", tr, err)
	}
	if _, _, err := e.Concurrent(3, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Restart(5); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkTurn(b *testing.B) {
	e := newEnv(b)
	_, ids, err := e.NewSessions(b.N + 1)
	if err != nil {
		b.Fatal(err)
	}
	e.Turn(ids[b.N])
	b.ResetTimer()
	before := e.Exec.ns.Load()
	for i := 0; i < b.N; i++ {
		if _, err := e.Turn(ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(e.Exec.ns.Load()-before)/float64(b.N), "tool-ns/op")
}
