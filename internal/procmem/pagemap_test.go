package procmem

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readSink keeps a read from being optimised away.
var readSink byte

// pagemapEntry reads the /proc/self/pagemap entry of the page at addr.
func pagemapEntry(t *testing.T, addr uintptr) uint64 {
	t.Helper()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no /proc/self/pagemap: %v", err)
	}
	defer pm.Close()
	b := make([]byte, 8)
	if _, err := pm.ReadAt(b, int64(addr/uintptr(os.Getpagesize())*8)); err != nil {
		t.Skipf("reading /proc/self/pagemap: %v", err)
	}
	return binary.LittleEndian.Uint64(b)
}

// TestPageoutFilePagesKeepsWrittenPages maps a file privately and
// writably, as the executable's data segment is mapped: a page only read
// is still the file's and is paged out; a page written is the process's
// own and stays, with what was written.
func TestPageoutFilePagesKeepsWrittenPages(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "data")
	content := make([]byte, 2*page)
	for i := range content {
		content[i] = 'a'
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Clean pages, as an executable's are: the kernel does not page out
	// a dirty page cache page from madvise.
	if _, err := f.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	readSink = m[0] // read: the file's page
	m[page] = 'b'   // written: a private copy
	start := uintptr(unsafe.Pointer(&m[0]))
	if e := pagemapEntry(t, start); e&pagemapPresent == 0 || e&pagemapFilePage == 0 {
		t.Skipf("pagemap does not report the read page as a present file page (%#x, next %#x)", e, pagemapEntry(t, start+uintptr(page)))
	}
	if e := pagemapEntry(t, start+uintptr(page)); e&pagemapFilePage != 0 {
		t.Fatalf("written page reported as the file's: %#x", e)
	}
	pageoutFilePages(start, start+uintptr(2*page))
	if e := pagemapEntry(t, start); e&pagemapPresent != 0 {
		// Still mapped: pageoutFilePages missed it, unless this kernel
		// does not page out at all.
		unix.Syscall(unix.SYS_MADVISE, start, uintptr(page), uintptr(unix.MADV_PAGEOUT))
		if e := pagemapEntry(t, start); e&pagemapPresent != 0 {
			t.Skipf("this kernel keeps the page mapped after MADV_PAGEOUT: %#x", e)
		}
		t.Errorf("the read page was not paged out")
	}
	if e := pagemapEntry(t, start+uintptr(page)); e&pagemapPresent == 0 {
		t.Errorf("the written page was paged out: %#x", e)
	}
	if m[page] != 'b' || m[0] != 'a' {
		t.Errorf("contents changed: %q %q", m[0], m[page])
	}
}
