package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
)

// TestForkBombStopsAtLimit runs a fork bomb in a stage whose profile
// allows 20 processes. As root RLIMIT_NPROC does nothing, so only the
// stage's pids cgroup can stop it.
func TestForkBombStopsAtLimit(t *testing.T) {
	if ABI() == 0 {
		skipUnlessCI(t, "no landlock")
	}
	if os.Getuid() == 0 {
		if _, err := stageCgroups(); err != nil {
			t.Fatalf("root, and no process limit that holds for root: %v", err)
		}
	}
	t.Log(ProcessLimit())
	cwd, pr, bomb := forkBomb(t)
	defer pr.Close()
	for _, oneShot := range []bool{false, true} {
		// The children wait to be killed: the stage's Wait killed them
		// with its cgroup, so none of them is left.
		bomb(fmt.Sprintf("oneshot=%v", oneShot), Cmd{OneShot: oneShot})
	}
	// The daemon is fine: the next stage runs.
	out, ws := run(t, pr, Cmd{Path: "/bin/echo", Args: []string{"echo", "fine"}, Dir: cwd})
	if out != "fine\n" || ws.ExitStatus() != 0 {
		t.Errorf("after the bomb: %v %q", ws, out)
	}
	if r, err := stageCgroups(); err == nil {
		// Emptied cgroups are kept for the next stages: none may hold a
		// process once its stage is reaped, but for the resident
		// helper's threads waiting in theirs.
		helper := strconv.Itoa(residentPid(t)) + "\n"
		ents, _ := os.ReadDir(r.dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(r.dir, e.Name(), "cgroup.procs"))
			if e.IsDir() && len(b) > 0 && (string(b) != helper || !strings.HasPrefix(e.Name(), placedPrefix)) {
				t.Errorf("stage cgroup %s still holds %s", e.Name(), b)
			}
		}
	}
}

// forkBomb prepares the workspace profile allowing 20 processes, and
// returns a bomb that runs the canary's fork bomb as c (its path, argv
// and directory filled in) and checks that it stopped below 20 with
// EAGAIN. what names the run in messages.
func forkBomb(t *testing.T) (cwd string, pr *Prepared, bomb func(what string, c Cmd)) {
	t.Helper()
	cwd, tmp, exe := canaryDir(t)
	prof := config.BuiltinProfiles()["workspace"]
	prof.Limits.Procs = 20
	pr = prepare(t, prof, Paths{Cwd: cwd, Tmp: tmp})
	return cwd, pr, func(what string, c Cmd) {
		t.Helper()
		c.Path, c.Args, c.Dir = exe, []string{"canary", canaryCommand, "forks", "500"}, cwd
		out, ws := run(t, pr, c)
		var got, errno int
		if !strings.HasPrefix(out, "TRIED forks\n") {
			t.Fatalf("%s: not tried: %v %q", what, ws, out)
		}
		if _, err := fmt.Sscanf(strings.TrimPrefix(out, "TRIED forks\n"), "forked %d %d", &got, &errno); err != nil {
			t.Fatalf("%s: %q: %v", what, out, err)
		}
		t.Logf("%s: forked %d, then errno %d", what, got, errno)
		// Go's runtime threads count as well as the children.
		if got >= 20 || syscall.Errno(errno) != unix.EAGAIN {
			t.Errorf("%s: forked %d children, stopped by errno %d; want fewer than 20, EAGAIN", what, got, errno)
		}
	}
}

// TestPlacedStageKeepsItsLimit: on a v1 pids hierarchy, the resident
// helper's ready threads wait in cgroups of their own, so that a program
// is born in its stage's cgroup instead of being moved there (which
// waits for an RCU grace period). The program must then be in such a
// cgroup before it runs, with its stage's limit: a fork bomb from it
// stops at the limit, and the cgroup is emptied after it.
func TestPlacedStageKeepsItsLimit(t *testing.T) {
	if ABI() == 0 {
		skipUnlessCI(t, "no landlock")
	}
	root, err := stageCgroups()
	if err != nil || root.v2 {
		skipUnlessCI(t, fmt.Sprintf("no v1 pids hierarchy for stage cgroups (%v)", err))
	}
	cwd, pr, bomb := forkBomb(t)
	defer pr.Close()
	// Threads made ready for this profile's filter, as Warm does at the
	// daemon's start; wait until they are placed.
	r, err := residentFor(helperExe(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.send(request{Warm: true, Spec: spec{Deny: pr.Policy.DenyFamilies}}, -1, nil); err != nil {
		t.Fatal(err)
	}
	helper := strconv.Itoa(r.cmd.Process.Pid) + "\n"
	deadline := time.Now().Add(time.Minute)
	for placed := 0; placed < warmPerFilter; {
		if time.Now().After(deadline) {
			t.Fatalf("%d threads of the helper placed after a minute, want %d", placed, warmPerFilter)
		}
		time.Sleep(5 * time.Millisecond)
		placed = 0
		ents, _ := os.ReadDir(root.dir)
		for _, e := range ents {
			if b, _ := os.ReadFile(filepath.Join(root.dir, e.Name(), "cgroup.procs")); strings.HasPrefix(e.Name(), placedPrefix) && string(b) == helper {
				placed++
			}
		}
	}
	// at is the program's pids cgroup and its limit, at the gate.
	var at string
	placedAt := func(pid int) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.SplitN(l, ":", 3); len(f) == 3 && f[1] == "pids" {
				dir := filepath.Join("/sys/fs/cgroup/pids", f[2])
				max, _ := os.ReadFile(filepath.Join(dir, "pids.max"))
				at = filepath.Base(dir) + " " + strings.TrimSpace(string(max))
			}
		}
	}
	for i := range 3 {
		at = ""
		bomb(fmt.Sprintf("stage %d", i), Cmd{Admit: placedAt})
		if !strings.HasPrefix(at, placedPrefix) || !strings.HasSuffix(at, " 20") {
			t.Fatalf("stage %d: at the gate the program was in %q, want a placed cgroup (%s...) with pids.max 20", i, at, placedPrefix)
		}
		dir := filepath.Join(root.dir, strings.Fields(at)[0])
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil && len(b) > 0 {
			t.Errorf("stage %d: its cgroup still holds %q after it was reaped", i, b)
		}
	}

	// The attack: a placed stage, sharing its cgroup with the helper's
	// thread for a moment, tries to leave it (for any other stage
	// cgroup, the daemon's directory of them, or the root) or to lift
	// the limits. It cannot read /proc/self, so it tries them all. Every
	// write must fail.
	at = ""
	escape := `echo TRIED
for f in "$1"/*/cgroup.procs "$1"/*/tasks "$1/cgroup.procs" "$1/../cgroup.procs" "$1/../tasks"; do
	(echo $$ > "$f") 2>/dev/null && echo "ESCAPED into $f"
done
for f in "$1"/*/pids.max "$1/pids.max"; do
	(echo max > "$f") 2>/dev/null && echo "ESCAPED: $f raised"
done
(mkdir "$1/mine") 2>/dev/null && echo "ESCAPED: made $1/mine"
echo done`
	out, ws := run(t, pr, Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", escape, "sh", root.dir}, Dir: cwd, Admit: placedAt})
	t.Logf("stage in %s: %v %q", at, ws, out)
	if !strings.HasPrefix(at, placedPrefix) {
		t.Errorf("the attacking stage was not placed: %q", at)
	}
	if !strings.HasPrefix(out, "TRIED\n") || !strings.HasSuffix(out, "done\n") || strings.Contains(out, "ESCAPED") {
		t.Errorf("a placed stage's attack on the cgroups: %q", out)
	}
}

// daemonCommand makes the test binary a daemon that starts one long
// stage through the resident helper, prints the pids of the stage and of
// a background process of it, and waits to be killed.
const daemonCommand = "stage-daemon"

func daemonMain(cwd, tmp string) int {
	pol, err := New("workspace", config.BuiltinProfiles()["workspace"], Paths{Cwd: cwd, Tmp: tmp})
	if err == nil {
		var pr *Prepared
		if pr, err = pol.Prepare(false); err == nil {
			exe, _ := os.Executable()
			var p *Proc
			p, err = pr.Start(Cmd{Helper: exe, Path: "/bin/sh", Dir: cwd, Stdout: os.Stdout, Stderr: os.Stderr,
				Args: []string{"sh", "-c", "sleep 1000 & echo $!; exec sleep 1000"}})
			if err == nil {
				fmt.Println("stage", p.Pid)
				select {}
			}
		}
	}
	fmt.Println("error", err)
	return 1
}

// TestStagesDieWithTheDaemon kills a daemon with SIGKILL while its stage
// runs, and requires the stage and what it started in the background to
// be gone soon after: they are not re-parented to init and left running.
func TestStagesDieWithTheDaemon(t *testing.T) {
	if ABI() == 0 {
		skipUnlessCI(t, "no landlock")
	}
	if os.Getuid() == 0 {
		if _, err := stageCgroups(); err != nil {
			t.Fatalf("root, and no stage cgroups: %v", err)
		}
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd, tmp := filepath.Join(root, "cwd"), filepath.Join(root, "tmp")
	os.Mkdir(cwd, 0o755)
	os.Mkdir(tmp, 0o755)
	d := exec.Command(helperExe(t), daemonCommand, cwd, tmp)
	out, err := d.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.Stderr = os.Stderr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for len(pids) < 2 && sc.Scan() {
		f := strings.Fields(sc.Text())
		if n, err := strconv.Atoi(f[len(f)-1]); err == nil && (len(f) == 1 || f[0] == "stage") {
			pids = append(pids, n)
			continue
		}
		d.Process.Kill()
		d.Wait()
		t.Fatalf("daemon: %s", sc.Text())
	}
	if len(pids) < 2 {
		d.Process.Kill()
		d.Wait()
		t.Fatal("daemon said nothing")
	}
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("process %d is not running before the daemon is killed", p)
		}
	}
	d.Process.Signal(syscall.SIGKILL)
	d.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range pids {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(p) {
			syscall.Kill(p, syscall.SIGKILL)
			t.Errorf("process %d of the stage still runs after the daemon was killed", p)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Warm's cgroups are there for the first stages: taken, not made.
func TestWarmCgroupsTaken(t *testing.T) {
	root, err := stageCgroups()
	if err != nil {
		skipUnlessCI(t, fmt.Sprintf("no stage cgroups (%v)", err))
	}
	for len(root.spare) > 0 { // what earlier tests kept
		rmdir(<-root.spare)
	}
	root.warm(2)
	if len(root.spare) != 2 {
		t.Fatalf("%d cgroups kept after warm(2)", len(root.spare))
	}
	next := root.n.Load()
	c, err := newStageCgroup(0, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.remove()
	if root.n.Load() != next {
		t.Errorf("the stage made cgroup s%d instead of taking a warm one", root.n.Load())
	}
	if _, err := os.Stat(c.dir); err != nil {
		t.Errorf("the warm cgroup %s: %v", c.dir, err)
	}
}
