package procmem

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Trim returns unused heap to the OS and drops the executable's clean,
// read-only file pages from the process's resident set (they come back
// from the page cache on use). It returns how many bytes of mappings it
// advised; errors are ignored (trimming is an optimisation only).
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
		start, end, ok := readOnlyExeMapping(sc.Text(), exe)
		if !ok {
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

// readOnlyExeMapping parses one /proc/self/maps line and reports a
// mapping of exe without write permission ("r-xp", "r--p").
func readOnlyExeMapping(line, exe string) (start, end uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || f[len(f)-1] != exe || strings.Contains(f[1], "w") {
		return 0, 0, false
	}
	a, b, found := strings.Cut(f[0], "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(a, 16, 64)
	e, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return s, e, true
}
