// Package trim gives back the memory a long-lived ollie process (the
// daemon, the resident sandbox helper) only needed to start.
package trim

import (
	"bufio"
	"encoding/binary"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Executable gives back the pages of this executable and of the
// shared libraries it loaded that start-up mapped and a long-lived
// process does not use again, and the heap that initialisation left.
//
// The kernel caches the executable in large folios and maps a whole 2 MB
// folio at the first touch of any byte in it, so the runtime's and the
// packages' initialisation alone leave some 30 MB of the binary resident
// in each ollie process (its own heap is 2 MB). The read-only mappings of
// the executable and of its libraries (text and read-only data) are told
// not to take huge mappings, and their pages that are the file's are
// dropped; what is used again faults back in 4 KB pages from the page
// cache, unchanged, as they were never written. The writable data
// mappings, and every page of a read-only one that the process wrote
// before it became read-only (RELRO: the loader's relocations), are left
// alone.
func Executable() {
	// The packages' initialisation made garbage (regular expressions,
	// tables) the process never touches again: collect it and give its
	// pages back first (the collection reads the runtime's tables in the
	// executable), not at the next collection, which an idle process
	// may not make for a long time.
	debug.FreeOSMemory()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return
	}
	defer pm.Close()
	for _, m := range readOnlyMappings() {
		if madvise(m.r, unix.MADV_NOHUGEPAGE) != nil {
			continue
		}
		if !m.written {
			madvise(m.r, unix.MADV_DONTNEED)
			continue
		}
		for _, r := range filePages(pm, m.r) {
			madvise(r, unix.MADV_DONTNEED)
		}
	}
}

// A mapping is a read-only private mapping of the executable or of a
// shared library; written says that it holds anonymous (written) pages.
type mapping struct {
	r       [2]uintptr
	written bool
}

// trimmable says whether a mapping of the file at path may be trimmed:
// the executable and the shared libraries, whose file nobody rewrites
// while they run. Other mapped files are left alone.
func trimmable(path, exe string) bool {
	if path == exe {
		return true
	}
	base := path[strings.LastIndexByte(path, '/')+1:]
	return strings.HasPrefix(path, "/") && (strings.HasSuffix(base, ".so") || strings.Contains(base, ".so."))
}

// readOnlyMappings returns the read-only private mappings of this
// executable and its shared libraries, from /proc/self/smaps. A
// read-only mapping may hold private pages: the dynamic loader writes the
// relocated addresses of RELRO and only then makes it read-only (and
// RELRO may share a mapping with the read-only data). Dropping those
// would bring back the file's unrelocated bytes (a call through them
// jumps to 0), so such a mapping is marked written, and filePages picks
// the pages of it that may go.
func readOnlyMappings() []mapping {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var (
		out []mapping
		cur mapping
		in  bool // cur is a trimmable read-only mapping
		ok  bool // its Anonymous field was read
	)
	end := func() {
		if in && ok {
			out = append(out, cur)
		}
		in = false
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if !strings.HasSuffix(fs[0], ":") {
			// 00402000-013bc000 r-xp 00002000 fe:00 9981232   /path
			end()
			if len(fs) != 6 || !trimmable(fs[5], exe) || strings.Contains(fs[1], "w") || !strings.HasSuffix(fs[1], "p") {
				continue
			}
			lo, hi, found := strings.Cut(fs[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if !found || err1 != nil || err2 != nil || b <= a {
				continue
			}
			cur, in, ok = mapping{r: [2]uintptr{uintptr(a), uintptr(b)}}, true, false
			continue
		}
		// A field of the mapping: "Anonymous:  4 kB". Unreadable = written.
		if in && fs[0] == "Anonymous:" {
			ok = true
			cur.written = len(fs) < 2 || fs[1] != "0"
		}
	}
	end()
	if sc.Err() != nil {
		return nil
	}
	return out
}

// Bits of a /proc/self/pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent = 1 << 63
	pmSwapped = 1 << 62
	pmFile    = 1 << 61 // a page of a file (or shared anonymous)
)

// filePages returns the runs of pages of r that hold nothing private:
// pages of the file, and pages not resident. A page present and not the
// file's, or swapped (only private pages are), is kept. On any doubt
// (pagemap unreadable) nothing is returned.
func filePages(pm *os.File, r [2]uintptr) [][2]uintptr {
	page := uintptr(os.Getpagesize())
	if r[0]%page != 0 || r[1]%page != 0 {
		return nil
	}
	n := int((r[1] - r[0]) / page)
	buf := make([]byte, 8*n)
	if _, err := pm.ReadAt(buf, int64(r[0]/page)*8); err != nil {
		return nil
	}
	var out [][2]uintptr
	start := -1
	for i := 0; i <= n; i++ {
		drop := false
		if i < n {
			e := binary.NativeEndian.Uint64(buf[8*i:])
			drop = e&pmSwapped == 0 && (e&pmPresent == 0 || e&pmFile != 0)
		}
		switch {
		case drop && start < 0:
			start = i
		case !drop && start >= 0:
			out = append(out, [2]uintptr{r[0] + uintptr(start)*page, r[0] + uintptr(i)*page})
			start = -1
		}
	}
	return out
}

// madvise takes the range as numbers: it is this process's own mapping,
// never Go memory, so it has no business being a slice.
func madvise(r [2]uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], uintptr(advice)); e != 0 {
		return e
	}
	return nil
}
