package serve

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// TestListenHolderNamesTheProcess (issue 26 F14): 'hiro serve' on a
// taken listen port says who holds it, as 'hiro backend start' does
// (port_in_use: "held by pid 5057 (python3)"); another error says
// nothing more.
func TestListenHolderNamesTheProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, err = net.Listen("tcp", addr)
	if err == nil {
		t.Fatal("a second listener on a taken port")
	}
	want := fmt.Sprintf(", held by pid %d (", os.Getpid())
	if got := listenHolder(addr, err); !strings.HasPrefix(got, want) {
		t.Errorf("listenHolder(%s, %v) = %q, want it to start %q", addr, err, got, want)
	}
	if got := listenHolder(addr, fmt.Errorf("permission denied")); got != "" {
		t.Errorf("another error: %q", got)
	}
}
