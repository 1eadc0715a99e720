package serve

import (
	"bufio"
	"encoding/binary"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// shedStartupMemory gives back what start-up touched and serving does
// not need: the heap's garbage (debug.FreeOSMemory), and the pages of the
// executable's read-only mappings (code and constant data) that package
// initialisation of the whole hiro binary faulted in. Those pages are
// clean copies of the file: MADV_PAGEOUT drops them from this process
// (they stay in the page cache) and the few the router runs fault back
// in. Measured on hiro serve: about 30 MB of the 43 MB resident at idle
// were such pages. The writable data mapping is paged out page by page,
// only where a page is still the file's (never written: the fonts the
// chart package parses at init, about 2 MB, tables); a page the process
// wrote is its own memory and stays. Best effort: errors are ignored
// (older kernels lack MADV_PAGEOUT).
func shedStartupMemory() {
	debug.FreeOSMemory()
	exe, err := os.Executable()
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if strings.Contains(fields[1], "w") {
			pageoutFilePages(uintptr(start), uintptr(end))
			continue
		}
		madvisePageout(uintptr(start), uintptr(end-start))
	}
}

// Bits of a /proc/self/pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
const (
	pagemapPresent  = 1 << 63
	pagemapFilePage = 1 << 61 // file page or shared anonymous: not written by a private mapping
)

// pageoutFilePages pages out the present pages of [start, end) that are
// still the file's, in runs; a page the process wrote (now anonymous) is
// left alone, since paging it out would need swap.
func pageoutFilePages(start, end uintptr) {
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return
	}
	defer pm.Close()
	page := uintptr(os.Getpagesize())
	entries := make([]byte, 8*((end-start)/page))
	if _, err := pm.ReadAt(entries, int64(start/page*8)); err != nil {
		return
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
			madvisePageout(run, addr-run)
			run = 0
		}
	}
	if run != 0 {
		madvisePageout(run, end-run)
	}
}

func madvisePageout(addr, length uintptr) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, length, unix.MADV_PAGEOUT)
}
