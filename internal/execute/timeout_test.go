package execute

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// marker returns a sleep duration no other process on the machine uses,
// so /proc can tell whether anything started with it is still alive.
func marker() string { return fmt.Sprintf("9%d.%06d", rand.IntN(1000), rand.IntN(1000000)) }

// survivors lists the processes whose command line contains m, waiting a
// while for killed ones to finish dying: SIGKILL is delivered at once but
// a process leaves /proc a little later.
func survivors(t *testing.T, m string) []string {
	t.Helper()
	var found []string
	for try := 0; try < 50; try++ {
		found = found[:0]
		dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, d := range dirs {
			b, err := os.ReadFile(d)
			if err == nil && bytes.Contains(b, []byte(m)) {
				found = append(found, d+": "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		if len(found) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return found
}

// A background process, even double-forked and trying to leave the
// process group, dies with its stage.
func TestBackgroundDiesWithStage(t *testing.T) {
	f := newFixture(t)
	m := marker()
	res := f.run(steps(bash(`
sleep ` + m + ` &
( sleep ` + m + ` & ) &
setsid sleep ` + m + ` 2>/dev/null &
nohup sleep ` + m + ` >/dev/null 2>&1 &
python3 -c '
import os, subprocess
if os.fork() == 0:
    try: os.setsid()
    except OSError as e: print("setsid:", e.strerror, flush=True)
    if os.fork() == 0:
        subprocess.Popen(["sleep", "` + m + `"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os._exit(0)
os.wait()
'
echo done`)))
	if res.Failed {
		t.Fatalf("stage failed: %s", res)
	}
	if !strings.Contains(string(res.Output), "setsid: Operation not permitted") {
		t.Errorf("setsid was not refused: %s", res.Output)
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Fatalf("processes outlived their stage:\n%s", strings.Join(s, "\n"))
	}
}

func TestStageTimeoutKeepsPartialOutput(t *testing.T) {
	f := newFixture(t)
	m := marker()
	res := f.run(steps(
		bash(`echo before`),
		Stage{Language: "bash", Timeout: 0.5, Code: `cat; echo partial; ( sleep ` + m + ` & ); sleep ` + m},
		bash(`echo never`),
	))
	if !res.Failed || !res.TimedOut || res.Stage != "2" {
		t.Fatalf("got %+v", res)
	}
	if string(res.Output) != "before\npartial\n" {
		t.Errorf("partial output %q", res.Output)
	}
	if !strings.Contains(res.String(), "timed out after 500ms; its output so far is above") {
		t.Errorf("text:\n%s", res)
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Fatalf("processes outlived the timeout:\n%s", strings.Join(s, "\n"))
	}
}

func TestOverallTimeout(t *testing.T) {
	f := newFixture(t)
	m := marker()
	res := f.run(`{"timeout": 0.5, "steps": [
		{"language": "bash", "code": "echo a"},
		{"parallel": [
			{"language": "bash", "code": "echo b; sleep ` + m + `"},
			{"language": "python3", "code": "import time\nprint('c', flush=True)\ntime.sleep(` + m + `)"}
		]}]}`)
	if !res.Failed || !res.TimedOut || res.Stage != "2.1" {
		t.Fatalf("got %+v", res)
	}
	if string(res.Output) != "b\n" {
		t.Errorf("partial output %q", res.Output)
	}
	if s := survivors(t, m); len(s) > 0 {
		t.Fatalf("processes outlived the timeout:\n%s", strings.Join(s, "\n"))
	}
}

func TestCancelInterrupts(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := contextWithCancelAfter(t, 200*time.Millisecond)
	defer cancel()
	res, err := f.executor().Run(ctx, f.spec(), []byte(code("bash", "echo started; sleep 60")))
	if err == nil || res == nil || !res.Failed || string(res.Output) != "started\n" || res.Reason != "was interrupted" {
		t.Fatalf("got %v, %+v", err, res)
	}
}
