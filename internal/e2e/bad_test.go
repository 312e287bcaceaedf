package e2e_test

import (
	"os"

	"9fans.net/go/plan9"

	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput feeds the mount what a user gets wrong. Each must fail
// with a clear errno, log the daemon's reason, and change nothing on disk.
func TestBadInput(t *testing.T) {
	e := start(t)
	agent, _ := e.disk(e.cfg.ConfigDir, "a/default.json")

	e.fails(`echo garbage > $M/a/x.json`, "Invalid argument")
	if _, ok := e.disk(e.cfg.ConfigDir, "a/x.json"); ok {
		t.Errorf("a/x.json left on disk after a rejected write")
	}
	e.sh(`test ! -e $M/a/x.json; ls $M/a | grep -vqx x.json`)

	e.fails(`echo '{"bogus":1}' > $M/a/default.json`, "Invalid argument")
	if got, _ := e.disk(e.cfg.ConfigDir, "a/default.json"); got != agent {
		t.Errorf("a/default.json changed by a rejected write:\n%s", got)
	}
	if got := e.sh(`cat $M/a/default.json`); got != agent {
		t.Errorf("a/default.json through the mount after a rejected write:\n%s", got)
	}
	if !strings.Contains(e.log.String(), "bogus") {
		t.Errorf("the mount log lacks the daemon's reason for refusing bogus:\n%s", e.log)
	}

	for _, f := range []string{"help", "p/base.md", "t/idx", "sk/idx", "backends", "stats/uptime"} {
		e.fails(`echo x > $M/`+f, "Permission denied")
		e.fails(`echo x >> $M/`+f, "Permission denied")
	}
	e.fails(`touch $M/p/new.md`, "Permission denied")
	e.fails(`rm $M/p/base.md`, "Permission denied")
	if _, ok := e.disk(e.cfg.ConfigDir, "p/base.md"); !ok {
		t.Errorf("p/base.md removed")
	}

	e.fails(`touch "$M/m/bad name"`, "Invalid argument")
	e.fails(`echo x > "$M/m/bad name"`, "Invalid argument")
	e.fails(`mkdir "$M/m/bad name"`, "Invalid argument")
	e.fails(`echo x > $M/m/good; mv $M/m/good "$M/m/bad name"`, "Operation not permitted")
	e.sh(`test -e $M/m/good`)
	e.fails(`echo x > $M/t/idx.new; mv $M/t/idx.new $M/t/idx`, "Permission denied")
	e.sh(`test -e $M/t/idx.new; grep -qv '^x$' $M/t/idx`)
	if got := e.sh(`ls -a $DATA/m`); strings.Contains(got, "bad") {
		t.Errorf("a bad name reached the disk:\n%s", got)
	}

	// .. is resolved by the kernel, inside the mount: it never reaches
	// the daemon's file system root.
	if got := e.sh(`cat $M/t/../../etc/passwd 2>&1 || true`); strings.Contains(got, "root:") {
		t.Errorf("cat t/../../etc/passwd escaped the tree:\n%s", got)
	}
	if got := e.sh(`cat $M/t/../help`); !strings.Contains(got, "m/") {
		t.Errorf("cat t/../help = %q", got)
	}
}

// TestBigAndBinaryData round-trips a 1 MB line and bytes of every value
// through m/, and compares them with what is on disk.
func TestBigAndBinaryData(t *testing.T) {
	e := start(t)
	e.sh(`cd $W; head -c 1048576 /dev/zero | tr '\0' a > line; echo >> line; cp line $M/m/line; cmp line $M/m/line; test $(wc -L < $M/m/line) = 1048576
		head -c 3000000 /dev/urandom > bin; cat bin > $M/m/bin; cmp bin $M/m/bin; test $(stat -c %s $M/m/bin) = 3000000
		for i in $(seq 0 255); do printf "\\$(printf %o $i)"; done > all; cp all $M/m/all; cmp all $M/m/all
		cat line >> $M/m/bin; test $(stat -c %s $M/m/bin) = 4048577`)
	b, err := os.ReadFile(filepath.Join(e.cfg.DataDir, "m", "all"))
	if err != nil || len(b) != 256 {
		t.Fatalf("m/all on disk: %d bytes, %v", len(b), err)
	}
	for i, c := range b {
		if int(c) != i {
			t.Fatalf("m/all on disk: byte %d is %d", i, c)
		}
	}
}

// TestSmallMsize reads big files through a server whose messages are
// smaller than the kernel's reads. Each FUSE read then takes several
// Treads; a short one, passed on, made the kernel take it for the end of
// the file and shrink the file to it (wc -L saw a 160 KiB line of 1 MiB).
func TestSmallMsize(t *testing.T) {
	e := start(t, func(e *env) { e.opts.Msize = 8192 + plan9.IOHDRSZ })
	e.sh(`cd $W; head -c 1048576 /dev/zero | tr '\0' a > line; echo >> line; cp line $M/m/line
		test $(wc -L < $M/m/line) = 1048576; cmp line $M/m/line; dd if=$M/m/line bs=1M 2>/dev/null | cmp line
		head -c 300000 /dev/urandom > bin; cp bin $DATA/m/bin; cmp bin $M/m/bin`)
}
