// Package procmem trims hiro's own resident memory while it waits on a
// long operation (supervising an engine that loads for minutes).
//
// A Go binary as large as hiro touches tens of megabytes of its own file
// pages (code, read-only data, the pc-line table) while every package
// initialises, and never uses most of them again. Those pages are clean
// copies of the executable in the page cache: dropping them from the
// process (madvise MADV_PAGEOUT, or MADV_DONTNEED) costs nothing but a
// minor fault if one is needed again. Anonymous memory goes back to the
// OS through runtime/debug.FreeOSMemory.
//
// It must not touch anonymous memory or a page the process wrote with
// madvise (that would discard data or need swap), nor anything but the
// process's own executable: in the writable data segment, only pages
// /proc/self/pagemap reports as still the file's are paged out.
package procmem
