package e2e_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShellOps does what a user does in a shell, with coreutils, and
// checks the effect on the daemon's directories on disk.
func TestShellOps(t *testing.T) {
	e := start(t)
	ls := e.sh(`ls -l $M`)
	for _, name := range []string{"help", "backends", "a", "p", "sk", "t", "m", "tr", "tmp", "s", "stats"} {
		if !strings.Contains(ls, " "+name+"\n") {
			t.Errorf("ls -l of the root lacks %s:\n%s", name, ls)
		}
	}
	if got := e.sh(`ls -l $M/a $M/sk $M/t`); !strings.Contains(got, "default.json") || !strings.Contains(got, "tree.md") || !strings.Contains(got, " idx\n") {
		t.Errorf("ls -l a sk t:\n%s", got)
	}
	if got := e.sh(`cat $M/help`); !strings.Contains(got, "m/") || !strings.Contains(got, "Memory notes") {
		t.Errorf("cat help:\n%s", got)
	}

	e.sh(`echo one > $M/m/f; echo two >> $M/m/f; test "$(cat $M/m/f)" = "one
two"`)
	if got, _ := e.disk(e.cfg.DataDir, "m/f"); got != "one\ntwo\n" {
		t.Errorf("m/f on disk = %q", got)
	}
	e.sh(`echo 1 > $M/m/f; test "$(cat $M/m/f)" = 1`) // O_TRUNC of an existing file
	e.sh(`mv $M/m/f $M/m/g; test ! -e $M/m/f; test "$(cat $M/m/g)" = 1`)
	e.sh(`echo x > $M/m/h; mv $M/m/h $M/m/g; test "$(cat $M/m/g)" = x`) // rename over a file
	if _, ok := e.disk(e.cfg.DataDir, "m/h"); ok {
		t.Errorf("m/h still on disk after mv")
	}
	e.sh(`cp $M/m/g $M/m/c; cp -p $M/m/g $M/m/cp; cmp $M/m/c $M/m/cp; cp $M/help $M/tmp/help.copy; cmp $M/help $M/tmp/help.copy`)
	e.sh(`touch $M/m/new; test -e $M/m/new; test ! -s $M/m/new; touch -d @1000000000 $M/m/c; test $(stat -c %Y $M/m/c) = 1000000000`)
	e.sh(`rm $M/m/c $M/m/cp $M/m/new; test ! -e $M/m/c`)
	if _, ok := e.disk(e.cfg.DataDir, "m/c"); ok {
		t.Errorf("m/c still on disk after rm")
	}

	e.sh(`mkdir $M/t/sub; printf '#!/bin/sh\n# description: says hi\necho hi\n' > $M/t/sub/hi; ls -ld $M/t/sub | grep -q '^d'`)
	if got, ok := e.disk(e.cfg.ConfigDir, "t/sub/hi"); !ok || !strings.Contains(got, "echo hi") {
		t.Errorf("t/sub/hi on disk = %q, %v", got, ok)
	}
	e.sh(`rm -r $M/t/sub; test ! -e $M/t/sub`)

	e.sh(`echo 'needle in memory' > $M/m/hay; printf -- '---\nname: hay\ndescription: needle skill\n---\nbody\n' > $M/sk/hay.md`)
	got := e.sh(`grep -r needle $M/t $M/sk $M/m | sort`)
	if !strings.Contains(got, "m/hay:needle in memory") || !strings.Contains(got, "sk/hay.md:description: needle skill") {
		t.Errorf("grep -r over t/ sk/ m/:\n%s", got)
	}
	if got := e.sh(`cat $M/sk/idx`); !strings.Contains(got, "hay: needle skill") {
		t.Errorf("sk/idx after adding a skill:\n%s", got)
	}
}

// TestEditors edits files with sed -i and vim: both write a new file and
// rename it over the old one (sed), or rewrite the file in place (vim),
// which must also work in the validated a/ and sk/ directories.
func TestEditors(t *testing.T) {
	e := start(t)
	e.sh(`printf 'alpha\nbeta\n' > $M/m/e; sed -i 's/beta/gamma/' $M/m/e; test "$(cat $M/m/e)" = "alpha
gamma"`)
	e.sh(`sed -i 's/"max_steps": 50/"max_steps": 7/' $M/a/default.json; grep -q '"max_steps": 7' $M/a/default.json`)
	if got, _ := e.disk(e.cfg.ConfigDir, "a/default.json"); !strings.Contains(got, `"max_steps": 7`) {
		t.Errorf("a/default.json on disk after sed -i:\n%s", got)
	}
	if _, err := exec.LookPath("vim"); err != nil {
		t.Fatal("vim is not installed (apt-get install vim-nox)")
	}
	vim := `vim -u NONE -N -es -n `
	e.sh(vim + `-c '%s/How the ollie file tree works/How the tree works/' -c 'wq' $M/sk/tree.md; grep -q 'description: How the tree works' $M/sk/tree.md; grep -q '^tree: How the tree works' $M/sk/idx`)
	e.sh(vim + `-c '%s/"max_steps": 7/"max_steps": 9/' -c 'wq' $M/a/default.json`)
	if got, _ := e.disk(e.cfg.ConfigDir, "a/default.json"); !strings.Contains(got, `"max_steps": 9`) {
		t.Errorf("a/default.json on disk after vim:\n%s", got)
	}
	e.sh(`cd /tmp && ` + vim + `-c 'call setline(1, "new note")' -c 'wq' $M/m/v; test "$(cat $M/m/v)" = "new note"`)
	if got := e.sh(`ls -a $M/m $M/a $M/sk | grep -Ec 'swp|~$|^sed' || true`); strings.TrimSpace(got) != "0" {
		t.Errorf("an editor left files behind:\n%s", e.sh(`ls -a $M/m $M/a $M/sk`))
	}
}

// TestRenames renames files and directories whose nodes the kernel (and
// the bridge, with a fid for each) already knows, through the mount and
// behind its back on disk. A disk-backed fid names its file by path, so
// every one of these left a node with a dead fid: "No such file" until the
// kernel forgot the inode.
func TestRenames(t *testing.T) {
	e := start(t)
	e.sh(`mkdir $M/m/d; echo x > $M/m/d/x; cat $M/m/d/x; mv $M/m/d $M/m/e; test "$(cat $M/m/e/x)" = x; test ! -e $M/m/d`)
	e.sh(`echo y >> $M/m/e/x; test "$(cat $M/m/e/x)" = "x
y"`)
	// Behind the mount's back, the kernel may keep the old names for the
	// entry timeout (1s); the new names work at once.
	e.sh(`echo a > $M/m/a; cat $M/m/a; mv $DATA/m/a $DATA/m/b; test "$(cat $M/m/b)" = a`)
	e.sh(`stat $M/m/e/x >/dev/null; mv $DATA/m/e $DATA/m/f; test "$(cat $M/m/f/x)" = "x
y"; ls $M/m/f | grep -qx x`)
	e.sh(`sleep 1.1; test ! -e $M/m/a; test ! -e $M/m/e/x`)
	e.sh(`exec 3<$M/m/b; mv $M/m/b $M/m/c; test "$(stat -L -c %s /dev/fd/3)" = 2; test "$(cat <&3)" = a`)
}
