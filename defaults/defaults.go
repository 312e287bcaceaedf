// Package defaults holds the files ollie ships: prompt parts, skills,
// tools, utilities, plugins, session scripts and the default agent. They
// are installed on first start and upgraded later only where the user has
// not edited them.
//
// Its tests are those of what it ships: every tool runs through
// execute_code in the real sandbox, as a model calls it, and the tools
// that use the tree ($OLLIE) run against a real daemon mounted through
// FUSE, driven by a scripted model (docs/tools.md). The stage table
// battery (stagetable_test.go) lives here too.
package defaults

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"ollie.dev/ollie/internal/durable"
)

//go:embed all:a all:p all:sk all:t all:u all:x all:s all:b
var files embed.FS

// FS returns the shipped files, laid out as in the tree (a/default.json ...).
func FS() fs.FS { return files }

// manifestName records, per installed file, the hash of what was shipped,
// so an upgrade can tell an untouched copy from a user's edit.
const manifestName = ".ollie-defaults.json"

// Report says what Install did.
type Report struct {
	Installed []string // new files
	Upgraded  []string // untouched copies replaced by a newer shipped version
	Kept      []string // edited by the user, with a newer shipped version; left alone
}

// Install copies the shipped files of the top directories in dirs (for
// example "a", "p") into root/<dir>. A file is written when it is absent
// and was never installed, or when it is byte-identical to what was last
// installed and the shipped version changed. A file the user edited or
// deleted stays as the user left it.
//
// A file whose shipped version is the one the manifest says was last
// installed is not read at all: whatever the user made of it (kept,
// edited, deleted) stays, so a start with the defaults installed reads
// only the manifest, and writes nothing. And when the manifest says that
// this very executable found every file so (see checkedKey), the shipped
// files are not even looked at.
func Install(root string, dirs ...string) (Report, error) {
	var rep Report
	manPath := filepath.Join(root, manifestName)
	man := map[string]string{}
	var old []byte
	if b, err := os.ReadFile(manPath); err == nil {
		if err := json.Unmarshal(b, &man); err != nil {
			man = map[string]string{} // a damaged manifest only costs upgrades
		} else {
			old = b
		}
	}
	stamp := shippedStamp(dirs)
	if stamp != "" && man[checkedKey] == stamp+" "+entriesDigest(man) {
		return rep, nil
	}
	fullChecks.Add(1)
	var todo []pending
	current := true // every shipped file is recorded as installed as shipped
	for _, dir := range dirs {
		err := fs.WalkDir(files, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(path.Base(p), ".") {
				return err
			}
			data, err := files.ReadFile(p)
			if err != nil {
				return err
			}
			sum := hash(data)
			w, err := installOne(root, p, data, sum, man, &rep)
			if w != nil {
				todo = append(todo, *w)
			} else if man[p] != sum {
				current = false // kept as the user edited it, or deleted
			}
			return err
		})
		if err != nil {
			return rep, err
		}
	}
	if err := writeAll(root, todo, man); err != nil {
		return rep, err
	}
	delete(man, checkedKey)
	if current && stamp != "" {
		man[checkedKey] = stamp + " " + entriesDigest(man)
	}
	b, _ := json.MarshalIndent(man, "", "\t")
	if bytes.Equal(b, old) {
		return rep, nil
	}
	return rep, durable.Replace(manPath, b, 0600, true)
}

// checkedKey is the manifest's entry that lets a start skip the shipped
// files: the executable that last found every one of them installed as
// shipped (by device, inode, size and times, so another build or a copy
// is another executable), the directories it looked at, and a digest of
// the manifest's other entries then. Reading the 35 shipped files and
// hashing them was 1 ms of every start of the daemon.
//
// The digest is what keeps the shortcut honest: an older ollie, which
// knows nothing of this entry, keeps it as it is when it installs its own
// versions, but the entries it changes no longer match the digest, and
// the next start looks at every file again. A manifest the user edits is
// the same. A shipped file the user edited or deleted, whose shipped
// version has changed, is looked at by every start, as before (an edit
// undone is then upgraded), so the entry is not written while there is
// one. Two executables started in turn on one home (a build being worked
// on beside the installed one) each find the other's entry, look at every
// file and write the manifest again: as every start did before, plus that
// write.
const checkedKey = ".checked"

// fullChecks counts the Installs that looked at the shipped files.
var fullChecks atomic.Int64

// shippedStamp names this executable and dirs, or is "" when the
// executable cannot be found (then every Install looks at every file).
func shippedStamp(dirs []string) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d:%d.%d %s", st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, strings.Join(dirs, ","))
}

// entriesDigest is a digest of the manifest's entries but checkedKey.
func entriesDigest(man map[string]string) string {
	keys := make([]string, 0, len(man))
	for k := range man {
		if k != checkedKey {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(man[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// A pending file is one Install writes.
type pending struct {
	p, dst string
	data   []byte
	sum    string
}

// writeAll writes the files, each made durable before it is renamed into
// place, then the directories that got them; only then does the manifest
// say they were installed. The files go to the disk several at once. (One
// syncfs(2) of their file system once made them durable at once, but it
// also flushes everything else dirty there: right after 57 MB had been
// written to the same disk, as ./run.sh's install of the binaries does,
// an install took 130 ms instead of 12. On a clean disk the two take
// about as long: 10 to 13 ms for the 35 files of a first start, most of
// it their inodes; docs/bench.md.)
func writeAll(root string, todo []pending, man map[string]string) error {
	if len(todo) == 0 {
		return nil
	}
	dirs := map[string]bool{root: true} // and the new directories' entries in it
	for _, w := range todo {
		for d := filepath.Dir(w.dst); d != root && len(d) > len(root); d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	err := atOnce(len(todo), func(i int) error {
		w := todo[i]
		return durable.Replace(w.dst, w.data, mode(w.p), true)
	})
	if err != nil {
		return err
	}
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	if err := atOnce(len(list), func(i int) error { return durable.Sync(list[i]) }); err != nil {
		return err
	}
	for _, w := range todo {
		man[w.p] = w.sum
	}
	return nil
}

// writers is how many files writeAll has going to the disk at once.
const writers = 8

// atOnce calls f(0) to f(n-1), writers at a time, and returns the first
// error.
func atOnce(n int, f func(int) error) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range min(n, writers) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// installOne decides about one shipped file, whose hash is sum: the write
// it needs, if any.
func installOne(root, p string, data []byte, sum string, man map[string]string, rep *Report) (*pending, error) {
	dst := filepath.Join(root, filepath.FromSlash(p))
	if man[p] == sum {
		return nil, nil // installed, and not changed since: nothing to do
	}
	cur, err := os.ReadFile(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, seen := man[p]; seen {
			return nil, nil // the user deleted it
		}
		rep.Installed = append(rep.Installed, p)
	case err != nil:
		return nil, err
	case hash(cur) == sum:
		man[p] = sum
		return nil, nil
	case man[p] == hash(cur):
		rep.Upgraded = append(rep.Upgraded, p)
	default:
		rep.Kept = append(rep.Kept, p)
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0700); err != nil {
		return nil, err
	}
	return &pending{p: p, dst: dst, data: data, sum: sum}, nil
}

// mode makes tools, utilities, plugins and session scripts executable.
func mode(p string) os.FileMode {
	switch strings.SplitN(p, "/", 2)[0] {
	case "t", "u", "x", "s", "b":
		return 0755
	}
	return 0644
}

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
