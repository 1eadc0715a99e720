package procmem

import (
	"bufio"
	"encoding/binary"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Trim returns unused heap to the OS and drops the executable's clean
// file pages from the process's resident set (they come back from the
// page cache on use): its read-only mappings (code, constant data, the
// pc-line table) whole, and the pages of its data segment still the
// file's. Measured on hiro serve: idle RSS from about 43 MB to 19 MB with
// the read-only mappings, to 10 MB with the data segment's pages. It
// returns how many bytes of mappings it advised; errors are ignored
// (trimming is an optimisation only).
func Trim() int64 {
	debug.FreeOSMemory()
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, writable, ok := exeMapping(sc.Text(), exe)
		if !ok {
			continue
		}
		if writable {
			total += pageoutFilePages(uintptr(start), uintptr(end))
			continue
		}
		advice := unix.MADV_PAGEOUT
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), uintptr(advice)); e != 0 {
			// Kernels before 5.4 lack MADV_PAGEOUT; DONTNEED is safe on a
			// private read-only file mapping (it is re-read on access).
			unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), uintptr(unix.MADV_DONTNEED))
		}
		total += int64(end - start)
	}
	return total
}

// exeMapping parses one /proc/self/maps line and reports a mapping of
// exe: read-only ("r-xp", "r--p") or writable ("rw-p", the data segment).
func exeMapping(line, exe string) (start, end uint64, writable, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || f[len(f)-1] != exe {
		return 0, 0, false, false
	}
	a, b, found := strings.Cut(f[0], "-")
	if !found {
		return 0, 0, false, false
	}
	s, err1 := strconv.ParseUint(a, 16, 64)
	e, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false, false
	}
	return s, e, strings.Contains(f[1], "w"), true
}

// Bits of a /proc/self/pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
const (
	pagemapPresent  = 1 << 63
	pagemapFilePage = 1 << 61 // file page or shared anonymous: not written through a private mapping
)

// pageoutFilePages pages out, in runs, the present pages of [start, end)
// that are still the file's (never written: the fonts a chart package
// parses at init, tables); a page the process wrote is anonymous now and
// stays (paging it out would need swap, and DONTNEED would lose it). It
// returns the bytes advised.
func pageoutFilePages(start, end uintptr) int64 {
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0
	}
	defer pm.Close()
	page := uintptr(os.Getpagesize())
	entries := make([]byte, 8*((end-start)/page))
	if _, err := pm.ReadAt(entries, int64(start/page*8)); err != nil {
		return 0
	}
	var total int64
	pageout := func(from, to uintptr) {
		unix.Syscall(unix.SYS_MADVISE, from, to-from, uintptr(unix.MADV_PAGEOUT))
		total += int64(to - from)
	}
	run := uintptr(0) // start of the current run of file pages, 0 for none
	for i := uintptr(0); i*8 < uintptr(len(entries)); i++ {
		e := binary.LittleEndian.Uint64(entries[i*8:])
		addr := start + i*page
		if e&pagemapPresent != 0 && e&pagemapFilePage != 0 {
			if run == 0 {
				run = addr
			}
			continue
		}
		if run != 0 {
			pageout(run, addr)
			run = 0
		}
	}
	if run != 0 {
		pageout(run, end)
	}
	return total
}
