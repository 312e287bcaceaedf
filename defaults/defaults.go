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
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
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
	Kept      []string // edited by the user; left alone
}

// Install copies the shipped files of the top directories in dirs (for
// example "a", "p") into root/<dir>. A file is written when it is absent
// and was never installed, or when it is byte-identical to what was last
// installed and the shipped version changed. A file the user edited or
// deleted stays as the user left it.
func Install(root string, dirs ...string) (Report, error) {
	var rep Report
	manPath := filepath.Join(root, manifestName)
	man := map[string]string{}
	if b, err := os.ReadFile(manPath); err == nil {
		if err := json.Unmarshal(b, &man); err != nil {
			man = map[string]string{} // a damaged manifest only costs upgrades
		}
	}
	for _, dir := range dirs {
		err := fs.WalkDir(files, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(path.Base(p), ".") {
				return err
			}
			data, err := files.ReadFile(p)
			if err != nil {
				return err
			}
			return installOne(root, p, data, man, &rep)
		})
		if err != nil {
			return rep, err
		}
	}
	b, _ := json.MarshalIndent(man, "", "\t")
	return rep, writeFile(manPath, b, 0600)
}

func installOne(root, p string, data []byte, man map[string]string, rep *Report) error {
	dst := filepath.Join(root, filepath.FromSlash(p))
	sum := hash(data)
	cur, err := os.ReadFile(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, seen := man[p]; seen {
			return nil // the user deleted it
		}
		rep.Installed = append(rep.Installed, p)
	case err != nil:
		return err
	case hash(cur) == sum:
		man[p] = sum
		return nil
	case man[p] == hash(cur):
		rep.Upgraded = append(rep.Upgraded, p)
	default:
		rep.Kept = append(rep.Kept, p)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0700); err != nil {
		return err
	}
	if err := writeFile(dst, data, mode(p)); err != nil {
		return err
	}
	man[p] = sum
	return nil
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

// writeFile replaces name atomically and durably.
func writeFile(name string, data []byte, perm os.FileMode) error {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
