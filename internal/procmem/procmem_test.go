package procmem

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func rssFileKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "RssFile:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

func TestTrimDropsExecutablePages(t *testing.T) {
	before := rssFileKB(t)
	n := Trim()
	after := rssFileKB(t)
	if n <= 0 {
		t.Fatalf("no read-only mapping of the executable was found")
	}
	if after >= before {
		t.Errorf("RssFile %d kB before, %d kB after: nothing dropped", before, after)
	}
}

func TestExeMapping(t *testing.T) {
	exe := "/usr/bin/hiro"
	type want struct{ ok, writable bool }
	for line, w := range map[string]want{
		"00400000-00a00000 r-xp 00000000 08:01 123 /usr/bin/hiro":  {true, false},
		"00a00000-00b00000 r--p 00600000 08:01 123 /usr/bin/hiro":  {true, false},
		"00b00000-00c00000 rw-p 00700000 08:01 123 /usr/bin/hiro":  {true, true},
		"00c00000-00d00000 rw-p 00000000 00:00 0 ":                 {false, false},
		"7f000000-7f100000 r-xp 00000000 08:01 9 /usr/lib/libc.so": {false, false},
	} {
		if _, _, writable, ok := exeMapping(line, exe); ok != w.ok || writable != w.writable {
			t.Errorf("%q: ok %v writable %v, want %+v", line, ok, writable, w)
		}
	}
}
