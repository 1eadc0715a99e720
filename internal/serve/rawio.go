//go:build linux

package serve

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawIO reads and writes a TCP connection's socket with raw system calls
// (syscall.RawSyscall inside syscall.RawConn's Read and Write, which wait
// on the network poller when the socket is not ready and honour the
// connection's deadlines and Close). Go's sockets are non-blocking, so
// such a call never blocks. What it saves is the runtime's bookkeeping
// around an ordinary system call: in a process whose goroutines are all
// waiting on the network between requests, each read or write wakes the
// runtime's monitor thread (sysmon) from its deep sleep. Measured through
// hiro serve with one client on the 2-core machine: 4.9 context switches
// per proxied request with net.Conn's Read and Write, 2.3 with rawIO, and
// 75 µs of CPU per request instead of 100 (bench/serve-proxy.sh: added
// latency at p50 from about 100 µs to about 85 µs).
//
// Errors have net.Conn's shapes: io.EOF when the peer closed, a
// *net.OpError wrapping an *os.SyscallError (ECONNRESET, EPIPE), a
// deadline (Timeout() true, errors.Is os.ErrDeadlineExceeded) or
// net.ErrClosed.
type rawIO struct {
	c  net.Conn
	rc syscall.RawConn
}

// newRawIO returns raw I/O for c when it is a TCP connection, nil
// otherwise (TLS, Unix sockets: their own Read and Write are used).
func newRawIO(c net.Conn) *rawIO {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawIO{c: c, rc: rc}
}

func (r *rawIO) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: r.c.LocalAddr(), Addr: r.c.RemoteAddr(), Err: err}
}

// Read reads what the socket holds, at most len(p) bytes; io.EOF when
// the peer closed its side.
func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		var again bool
		n, again, errno = sysRW(syscall.SYS_READ, fd, p)
		return !again
	})
	if err := r.result("read", err, errno); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p (waiting for room in the socket's buffer).
func (r *rawIO) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for n < len(p) && errno == 0 {
			m, again, e := sysRW(syscall.SYS_WRITE, fd, p[n:])
			if again {
				return false
			}
			n, errno = n+m, e
		}
		return true
	})
	return n, r.result("write", err, errno)
}

// sysRW makes one read or write system call (trap) on fd with p,
// repeated when a signal interrupted it; again is true when the socket
// is not ready (EAGAIN: the caller waits on the poller).
func sysRW(trap, fd uintptr, p []byte) (n int, again bool, errno syscall.Errno) {
	for {
		m, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case 0:
			return int(m), false, 0
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, true, 0
		}
		return 0, false, e
	}
}

// result is the error of a read or write (op) that RawConn ended with
// err (a deadline, a closed connection) or the system call with errno;
// nil for neither.
func (r *rawIO) result(op string, err error, errno syscall.Errno) error {
	switch {
	case err != nil:
		return unwrapRaw(r, op, err)
	case errno != 0:
		return r.opError(op, os.NewSyscallError(op, errno))
	}
	return nil
}

// unwrapRaw gives an error of RawConn's Read or Write (a deadline, a
// closed connection) the shape net.Conn's Read and Write give it.
func unwrapRaw(r *rawIO, op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		return r.opError(op, oe.Err)
	}
	return r.opError(op, err)
}

// pendingBytes returns how many bytes wait unread in c's socket (SIOCINQ:
// what the client sent that the server has not read yet), 0 when it
// cannot tell (a closed socket).
func pendingBytes(c net.Conn) int {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn() // a TLS connection's socket
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	})
	return n
}
