package serve

import (
	"bufio"
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
// were such pages. Best effort: errors are ignored (older kernels lack
// MADV_PAGEOUT).
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
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
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
		madvisePageout(uintptr(start), uintptr(end-start))
	}
}

func madvisePageout(addr, length uintptr) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, length, unix.MADV_PAGEOUT)
}
