//go:build linux

package serve

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestRawIO: raw reads and writes move the bytes (a write larger than
// the socket's buffers waits for room), and their errors have the shapes
// net.Conn's have, which fasthttp, the transport and the client watch
// test for: io.EOF, a deadline, a closed connection, a reset.
func TestRawIO(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := newRawIO(a), newRawIO(b)
	if ra == nil || rb == nil {
		t.Fatal("no raw I/O for a TCP connection")
	}
	if newRawIO(&clientConn{Conn: a}) != nil {
		t.Error("raw I/O for a connection that is not a *net.TCPConn (TLS goes through its own Read)")
	}

	// 16 MiB one way, written in one call, read as it arrives.
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<20)
	errc := make(chan error, 1)
	go func() {
		n, err := ra.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		errc <- err
	}()
	got := make([]byte, 0, len(want))
	buf := make([]byte, 64<<10)
	for len(got) < len(want) {
		n, err := rb.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from those written")
	}

	// A deadline ends a read that has nothing to read.
	b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	_, err := rb.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) || !isTimeout(err) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 5*time.Second {
		t.Errorf("the read waited %s for a 50 ms deadline", d)
	}
	b.SetReadDeadline(time.Time{})

	// The peer's close is io.EOF, unwrapped.
	a.(*net.TCPConn).CloseWrite()
	if n, err := rb.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer's close: %d %v, want 0 io.EOF", n, err)
	}

	// A read on a connection closed here is net.ErrClosed.
	b.Close()
	if _, err := rb.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed connection: %v, want net.ErrClosed", err)
	}
	if _, err := rb.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write on a closed connection: %v, want net.ErrClosed", err)
	}

	// A reset peer: the write or the read after it fails with the errno.
	c, d := tcpPair(t)
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	rd := newRawIO(d)
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		_, werr = rd.Write([]byte("ping"))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(werr, syscall.ECONNRESET) && !errors.Is(werr, syscall.EPIPE) {
		t.Fatalf("write to a reset peer: %v, want ECONNRESET or EPIPE", werr)
	}
	var oe *net.OpError
	if !errors.As(werr, &oe) || oe.Op != "write" {
		t.Errorf("write error %#v is not a *net.OpError for write", werr)
	}
}

// TestRawIOAllocatesNothing: a raw write and a raw read of a connection
// allocate nothing (the router makes several per request on the client's
// connection and the backend's, and the shadow mirror as many again).
func TestRawIOAllocatesNothing(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := newRawIO(a), newRawIO(b)
	msg, buf := []byte("POST / HTTP/1.1\r\n\r\n"), make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := ra.Write(msg); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(msg); {
			n, err := rb.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("a raw write and read allocate %.1f times, want 0", allocs)
	}
}
