package bench

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestMemoryAndCPU reads this process's memory and CPU time from /proc,
// and finds a child among its descendants.
func TestMemoryAndCPU(t *testing.T) {
	m, err := Memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.Procs < 1 || m.RSS <= 0 || m.PSS <= 0 || m.PSS > m.RSS {
		t.Errorf("memory of this process: %+v", m)
	}
	self, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The tree has this process in it, read after.
	if tree, err := TreeCPU(os.Getpid()); err != nil || tree < self {
		t.Errorf("CPU of this process's tree: %v (%v), of itself %v", tree, err, self)
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if d := Descendants(os.Getpid()); !slices.Contains(d, cmd.Process.Pid) {
		t.Errorf("descendants %v lack the child %d", d, cmd.Process.Pid)
	}
	if _, err := Memory(1 << 30); err == nil {
		t.Error("memory of no process: no error")
	}
}

// TestMarkerScanner: the numbered pieces are found wherever the stream is
// cut, once each, and nothing else is taken for one.
func TestMarkerScanner(t *testing.T) {
	text := []byte(ingestText()[:10*ingestChunk] + "#12x4567 #123456 #")
	for _, cut := range []int{1, 3, 7, 8, 9, 64, 1000} {
		var got []int
		var sc markerScanner
		for i := 0; i < len(text); i += cut {
			sc.scan(text[i:min(i+cut, len(text))], func(n int) { got = append(got, n) })
		}
		if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
			t.Errorf("cut every %d bytes: %v, want %v", cut, got, want)
		}
	}
}

// FuzzMarkerScanner: the scanner, fed the bytes of a model's stream cut
// anywhere, finds what it finds in them whole, and keeps no more than a
// marker's length between calls.
func FuzzMarkerScanner(f *testing.F) {
	f.Add([]byte("#0000001xx#0000002"), 3)
	f.Add([]byte("##0000001#"), 1)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		cut = max(1, cut%64)
		var whole, parts []int
		var sc markerScanner
		sc.scan(b, func(n int) { whole = append(whole, n) })
		sc = markerScanner{}
		for i := 0; i < len(b); i += cut {
			sc.scan(b[i:min(i+cut, len(b))], func(n int) { parts = append(parts, n) })
			if len(sc.carry) >= markerLen {
				t.Fatalf("carry of %d bytes", len(sc.carry))
			}
		}
		if !slices.Equal(whole, parts) {
			t.Fatalf("whole %v, cut every %d %v", whole, cut, parts)
		}
	})
}

// TestProcStop: a process that ignores SIGTERM is killed after the grace.
func TestProcStop(t *testing.T) {
	p, err := startProc("sh", t.TempDir(), nil, "sh", "-c", "trap '' TERM; echo up; exec sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.firstLine(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(10 * time.Millisecond); err == nil || !p.Exited() {
		t.Errorf("stop: %v, exited %v", err, p.Exited())
	}
}
