package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"ollie.dev/ollie/internal/config"
)

// BenchmarkPrepare is the per-call cost of the policy: carving (cached),
// /proc, and the Landlock ruleset.
func BenchmarkPrepare(b *testing.B) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	cwd, tmp := filepath.Join(home, "p"), filepath.Join(root, "tmp")
	os.MkdirAll(cwd, 0o755)
	os.MkdirAll(tmp, 0o755)
	prof := config.BuiltinProfiles()["workspace"]
	for b.Loop() {
		prepare(b, prof, Paths{Home: home, Cwd: cwd, Tmp: tmp}).Close()
	}
}

// BenchmarkPrepareNewSession is Prepare of the workspace profile for a
// session never seen before (its cwd and tmp are new), the base held as
// the daemon holds it: the miss a session's first call pays.
func BenchmarkPrepareNewSession(b *testing.B) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o755)
	prof := config.BuiltinProfiles()["workspace"]
	HoldBase(prof, home, nil)
	i := 0
	for b.Loop() {
		i++
		b.StopTimer()
		cwd, tmp := filepath.Join(home, fmt.Sprint("p", i)), filepath.Join(root, fmt.Sprint("tmp", i))
		os.MkdirAll(cwd, 0o755)
		os.MkdirAll(tmp, 0o755)
		b.StartTimer()
		prepare(b, prof, Paths{Home: home, Cwd: cwd, Tmp: tmp}).Close()
	}
}

// benchStart starts `sh -c :` under the workspace policy and waits for
// it, oneShot choosing the helper; with git the working directory has a
// .git, which the stage gets read-only in a mount namespace; guard is the
// port guard.
func benchStart(b *testing.B, oneShot, git bool, guard Guard) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	cwd, tmp := filepath.Join(home, "p"), filepath.Join(root, "tmp")
	os.MkdirAll(cwd, 0o755)
	os.MkdirAll(tmp, 0o755)
	if git {
		os.MkdirAll(filepath.Join(cwd, ".git", "hooks"), 0o755)
	}
	pol, err := New("workspace", config.BuiltinProfiles()["workspace"], Paths{Home: home, Cwd: cwd, Tmp: tmp})
	if err != nil {
		b.Fatal(err)
	}
	pol.Guard = guard
	pr, err := pol.Prepare(false)
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()
	exe, _ := os.Executable()
	for b.Loop() {
		p, err := pr.Start(Cmd{Helper: exe, Path: "/bin/sh", Args: []string{"sh", "-c", ":"}, Dir: cwd, OneShot: oneShot})
		if err != nil {
			b.Fatal(err)
		}
		if ws, err := p.Wait(); err != nil || ws.ExitStatus() != 0 {
			b.Fatal(ws, err)
		}
	}
}

// BenchmarkStart is Start and Wait of a trivial program through the
// resident helper; BenchmarkStartOneShot the same through a helper
// process of its own; BenchmarkStartBare a plain fork/exec.
func BenchmarkStart(b *testing.B)        { benchStart(b, false, false, Guard{}) }
func BenchmarkStartOneShot(b *testing.B) { benchStart(b, true, false, Guard{}) }

// BenchmarkStartGit and BenchmarkStartGitOneShot are the same with a
// protected .git in the working directory.
func BenchmarkStartGit(b *testing.B)        { benchStart(b, false, true, Guard{}) }
func BenchmarkStartGitOneShot(b *testing.B) { benchStart(b, true, true, Guard{}) }

// BenchmarkStartGuarded is BenchmarkStart with the port guard on.
func BenchmarkStartGuarded(b *testing.B) {
	benchStart(b, false, false, Guard{Connect: []uint16{5640}, Bind: []uint16{11434}})
}
func BenchmarkStartBare(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/sh", "-c", ":").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
