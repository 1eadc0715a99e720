package serve

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// plainHTTPError is what the access log's "error" says of a request sent
// in plain HTTP to a router that serves TLS.
const plainHTTPError = "plain HTTP to the TLS port"

// plainHTTPToTLS returns the connection of a client that sent plain
// HTTP (or anything not TLS) to the TLS listener, as the failed
// handshake reports it; nil for any other error.
func plainHTTPToTLS(err error) net.Conn {
	var rhe tls.RecordHeaderError
	if errors.As(err, &rhe) {
		return rhe.Conn
	}
	return nil
}

// refusePlainHTTP answers, in plain HTTP/1.0 on the raw connection c (TLS
// never began on it), a 400 saying the port speaks https, as net/http's
// server does; the answer fasthttp then tries to write through TLS goes
// nowhere. It is recorded with route and method "" (the request was not
// read) and the error plainHTTPError.
func (s *Server) refusePlainHTTP(x *exchange, c net.Conn) {
	var e errorBody
	e.Error.Message = fmt.Sprintf("this port speaks HTTPS (TLS): send the request to %s", s.addr)
	e.Error.Type, e.Error.Code = "invalid_request_error", http.StatusBadRequest
	body, _ := json.Marshal(e)
	body = append(body, '\n')
	head := fmt.Sprintf("HTTP/1.0 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(append([]byte(head), body...))
	x.ttfb = time.Since(x.start)
	x.status, x.bytes, x.e.Error = http.StatusBadRequest, int64(len(body)), plainHTTPError
}
