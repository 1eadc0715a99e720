package supervisor

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/procfs"
)

// listenAddr returns the host:port a managed profile listens on: Host and
// Port, or the host and port of BaseURL when Port is 0 (default port 80
// or 443 by scheme). ok is false when no port can be told.
func listenAddr(p *config.Profile) (addr string, port int, ok bool) {
	if p.Port != 0 {
		return net.JoinHostPort(p.Host, strconv.Itoa(p.Port)), p.Port, true
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	ps := u.Port()
	if ps == "" {
		ps = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, false
	}
	return net.JoinHostPort(u.Hostname(), ps), n, true
}

// portBusy reports whether addr (host:port) is taken: binding it fails
// with EADDRINUSE, or something accepts a connection there (a server on
// another address of the same port). The reason says which.
func portBusy(addr string) (bool, string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return true, "bind: address already in use"
		}
		// Cannot bind for another reason (address not local): fall
		// through to the connect check.
	} else {
		l.Close()
	}
	c, err := net.DialTimeout("tcp", addr, 50*time.Millisecond)
	if err == nil {
		c.Close()
		return true, "something already accepts connections there"
	}
	return false, ""
}

// PortUse is what PortInUse found at a profile's listen address.
type PortUse struct {
	// Addr is the host:port the profile listens on; Port its port.
	Addr string
	Port int
	// Busy says the address is taken; Why how (bind refused, or
	// something accepts there).
	Busy bool
	Why  string
	// Holders are the processes /proc shows holding the port (none when
	// they are another user's).
	Holders []procfs.Stat
}

// PortInUse looks at the address a managed profile listens on as Start's
// check before a launch does, so that a caller can refuse before it stops
// anything for the launch. A profile whose port cannot be told is not
// busy.
func PortInUse(prof *config.Profile) PortUse {
	addr, port, ok := listenAddr(prof)
	if !ok {
		return PortUse{}
	}
	u := PortUse{Addr: addr, Port: port}
	if u.Busy, u.Why = portBusy(addr); u.Busy {
		u.Holders = procfs.PortHolders(port)
	}
	return u
}
