package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// trimExecutable gives back the pages of this executable that start-up
// mapped and a long-lived process does not use again.
//
// The kernel caches the executable in large folios and maps a whole 2 MB
// folio at the first touch of any byte in it, so the runtime's and the
// packages' initialisation alone leave some 30 MB of the binary resident
// in each ollie process (its own heap is 2 MB). The read-only mappings of
// the executable (text and read-only data) are told not to take huge
// mappings and are dropped; what is used again faults back in 4 KB pages
// from the page cache, unchanged, as they were never written. The
// writable data mapping, and any read-only one the process wrote before
// it became read-only (RELRO), are left alone.
func trimExecutable() {
	for _, r := range cleanExeMappings() {
		if madvise(r, unix.MADV_NOHUGEPAGE) == nil {
			madvise(r, unix.MADV_DONTNEED)
		}
	}
}

// cleanExeMappings returns the read-only mappings of this executable that
// hold only pages of the file as it is on disk. A read-only mapping may
// still hold private pages: the dynamic loader writes the relocated
// addresses of RELRO and only then makes it read-only. Dropping those
// would bring back the file's unrelocated bytes (a call through them
// jumps to 0), so a mapping with any anonymous page is left alone.
func cleanExeMappings() [][2]uintptr {
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
		ranges [][2]uintptr
		cur    [2]uintptr
		in     bool // cur is a read-only mapping of exe
		clean  bool // and no anonymous page was counted in it
	)
	end := func() {
		if in && clean {
			ranges = append(ranges, cur)
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
			if len(fs) < 6 || fs[5] != exe || strings.Contains(fs[1], "w") || !strings.HasSuffix(fs[1], "p") {
				continue
			}
			lo, hi, ok := strings.Cut(fs[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok || err1 != nil || err2 != nil || b <= a {
				continue
			}
			cur, in, clean = [2]uintptr{uintptr(a), uintptr(b)}, true, true
			continue
		}
		// A field of the mapping: "Anonymous:  4 kB". Unknown = not clean.
		if in && fs[0] == "Anonymous:" && (len(fs) < 2 || fs[1] != "0") {
			clean = false
		}
	}
	end()
	if sc.Err() != nil {
		return nil
	}
	return ranges
}

// madvise takes the range as numbers: it is this process's own mapping,
// never Go memory, so it has no business being a slice.
func madvise(r [2]uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], uintptr(advice)); e != 0 {
		return e
	}
	return nil
}
