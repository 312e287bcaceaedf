package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/errs"
)

// A Proc is a program the benchmark started: the daemon, the scripted
// model, the mount, the echo floor. Each runs in a process of its own, as
// a user's would, so what the bench process measures crosses the same
// process boundaries a user's client does.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	log  string // its stdout and stderr
	done chan struct{}
	err  error // of Wait, once done is closed
}

// startProc starts argv with env added to this process's environment,
// its output going to logDir/name.log.
func startProc(name, logDir string, env []string, argv ...string) (*Proc, error) {
	return startProcOut(name, logDir, env, false, argv...)
}

// startProcOut is startProc, with stdout to /dev/null if quiet.
func startProcOut(name, logDir string, env []string, quiet bool, argv ...string) (*Proc, error) {
	p := &Proc{Name: name, log: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if quiet {
		p.cmd.Stdout = nil // /dev/null
	}
	// A process group of its own: a ^C of the bench reaches the bench,
	// which stops its processes in order (the mount before the daemon).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Log returns the end of what the process wrote.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and waits for the end, then SIGKILL after grace.
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop in %v", p.Name, grace)
	}
}

// waitFor polls ok until it holds, the process exits, or the deadline.
func (p *Proc) waitFor(what string, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if p.Exited() {
			return fmt.Errorf("%s exited before %s: %v\n%s", p.Name, what, p.err, p.Log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %s after %v\n%s", p.Name, what, timeout, p.Log())
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// waitSocket waits until a connection to the unix socket succeeds.
func (p *Proc) waitSocket(sock string, timeout time.Duration) error {
	return p.waitFor("socket "+sock, timeout, func() bool {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// firstLine waits for the first line the process writes to its log.
func (p *Proc) firstLine(timeout time.Duration) (string, error) {
	var line string
	err := p.waitFor("output", timeout, func() bool {
		b, _ := os.ReadFile(p.log)
		l, _, ok := bytes.Cut(b, []byte("\n"))
		line = string(l)
		return ok
	})
	return line, err
}

// clockTick is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on
// every Linux architecture Go supports.
const clockTick = 100

// CPU is the CPU time (user and system) the process pid has used, its
// threads included and its children not.
func CPU(pid int) (time.Duration, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	// Fields 14 and 15 of proc(5), utime and stime: 11 and 12 after the
	// state, which is the first after the command.
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+s) * time.Second / clockTick, nil
}

// TreeCPU is the CPU time of pid and its descendants, and of the children
// they have reaped: what the whole tree under pid has used.
func TreeCPU(pid int) (time.Duration, error) {
	var sum int64
	for _, p := range Descendants(pid) {
		f, err := procStat(p)
		if err != nil {
			if p == pid {
				return 0, err
			}
			continue // ended meanwhile: its parent has it now
		}
		// utime, stime, cutime, cstime: fields 14 to 17 of proc(5).
		for _, s := range f[11:15] {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, err
			}
			sum += v
		}
	}
	return time.Duration(sum) * time.Second / clockTick, nil
}

// procStat returns the fields of /proc/<pid>/stat after the command
// (which may contain spaces and parentheses): f[0] is the state, f[1]
// the parent's pid.
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errs.E(errs.Other, "bench: /proc/"+strconv.Itoa(pid)+"/stat has no command")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return nil, errs.E(errs.Other, "bench: /proc/"+strconv.Itoa(pid)+"/stat is short")
	}
	return f, nil
}

// Descendants returns pid and the pids of all its descendants: the daemon
// and its helpers (the resident sandbox helper, running stages).
func Descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(c)
		if err != nil {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], c)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// Mem is the memory of a set of processes, from smaps_rollup: resident
// set size, and proportional set size (each shared page divided among
// the processes that map it, so the PSS of a group adds up).
type Mem struct {
	Procs    int
	RSS, PSS int64 // bytes
}

// Memory adds up the memory of pid and its descendants.
func Memory(pid int) (Mem, error) {
	var m Mem
	for _, p := range Descendants(pid) {
		rss, pss, err := smapsRollup(p)
		if err != nil {
			if p == pid {
				return m, err
			}
			continue // a stage that ended meanwhile
		}
		m.Procs++
		m.RSS += rss
		m.PSS += pss
	}
	return m, nil
}

func smapsRollup(pid int) (rss, pss int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "Rss":
			dst = &rss
		case "Pss":
			dst = &pss
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("smaps_rollup of %d: %q: %w", pid, v, err)
		}
		*dst = kb << 10
	}
	return rss, pss, sc.Err()
}

// idleAge is how old a daemon must be to be idle: ollie's gives back the
// memory of its start-up a second after it starts (cmd/ollie/serve.go).
const idleAge = 1500 * time.Millisecond

// settle waits until the memory of pid stops growing (a daemon returns
// pages to the system, and finishes work started by the last request,
// some time after it answers), up to a second, and until pid is idleAge
// old.
func settle(ctx context.Context, pid int) (Mem, error) {
	if age, err := procAge(pid); err == nil && age < idleAge {
		select {
		case <-time.After(idleAge - age):
		case <-ctx.Done():
			return Mem{}, ctx.Err()
		}
	}
	last, err := Memory(pid)
	for i := 0; i < 10 && err == nil && ctx.Err() == nil; i++ {
		time.Sleep(100 * time.Millisecond)
		var m Mem
		if m, err = Memory(pid); err == nil && m.PSS >= last.PSS {
			return m, nil
		}
		last = m
	}
	return last, err
}

// procAge is how long ago pid started, to the kernel's clock tick.
func procAge(pid int) (time.Duration, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // starttime, the 22nd field of the line
	if err != nil {
		return 0, err
	}
	secs, err := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(secs*float64(time.Second)) - time.Duration(ticks)*time.Second/clockTick, nil
}
