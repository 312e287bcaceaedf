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
// writable data mapping is left alone.
func trimExecutable() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	var ranges [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00402000-013bc000 r-xp 00002000 fe:00 9981232   /path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[5] != exe || strings.Contains(fs[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			continue
		}
		ranges = append(ranges, [2]uintptr{uintptr(a), uintptr(b)})
	}
	for _, r := range ranges {
		if madvise(r, unix.MADV_NOHUGEPAGE) == nil {
			madvise(r, unix.MADV_DONTNEED)
		}
	}
}

// madvise takes the range as numbers: it is this process's own mapping,
// never Go memory, so it has no business being a slice.
func madvise(r [2]uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], uintptr(advice)); e != 0 {
		return e
	}
	return nil
}
