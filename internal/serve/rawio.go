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
//
// A read's and a write's state (the buffer, the count, the errno) live in
// the rawIO and their functions are bound once (newRawIO), so that a
// Read or a Write allocates nothing (a closure over its locals, passed to
// RawConn, escaped: one allocation per call, on the client's connection
// and the backend's). One Read and one Write may run at once, not two of
// either (the router reads a connection on one goroutine and writes it on
// one).
type rawIO struct {
	c  net.Conn
	rc syscall.RawConn

	rp      []byte
	rn      int
	rerrno  syscall.Errno
	readFn  func(fd uintptr) bool
	wp      []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
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
	r := &rawIO{c: c, rc: rc}
	r.readFn, r.writeFn = r.readOnce, r.writeAll
	return r
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
	r.rp, r.rn, r.rerrno = p, 0, 0
	err := r.rc.Read(r.readFn)
	n, errno := r.rn, r.rerrno
	r.rp = nil
	if err := r.result("read", err, errno); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// readOnce is Read's function for RawConn: one read into r.rp; false
// when the socket is not ready.
func (r *rawIO) readOnce(fd uintptr) bool {
	var again bool
	r.rn, again, r.rerrno = sysRW(syscall.SYS_READ, fd, r.rp)
	return !again
}

// Write writes all of p (waiting for room in the socket's buffer).
func (r *rawIO) Write(p []byte) (int, error) {
	r.wp, r.wn, r.werrno = p, 0, 0
	err := r.rc.Write(r.writeFn)
	n, errno := r.wn, r.werrno
	r.wp = nil
	return n, r.result("write", err, errno)
}

// writeAll is Write's function for RawConn: writes r.wp from r.wn on
// until all is written or an error; false when the socket is full.
func (r *rawIO) writeAll(fd uintptr) bool {
	for r.wn < len(r.wp) && r.werrno == 0 {
		m, again, e := sysRW(syscall.SYS_WRITE, fd, r.wp[r.wn:])
		if again {
			return false
		}
		r.wn, r.werrno = r.wn+m, e
	}
	return true
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
