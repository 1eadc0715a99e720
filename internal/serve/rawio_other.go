//go:build !linux

package serve

import (
	"net"

	"github.com/hiro-dev/hiro/internal/control"
)

// rawIO is Linux's (rawio.go); elsewhere connections use their own Read
// and Write.
type rawIO struct{ net.Conn }

func newRawIO(net.Conn) *rawIO { return nil }

// pendingBytes is Linux's (rawio.go); elsewhere a connection is taken
// for one with nothing waiting.
func pendingBytes(net.Conn) int { return 0 }
