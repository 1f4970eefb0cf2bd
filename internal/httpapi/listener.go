package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// WrapListener returns ln with its connections changed in one way: the
// few answers net/http's server writes by itself, before any handler
// runs, become JSON errors in this package's format like every other
// error. Those are 400 for a request that is not well-formed HTTP (a
// garbage request line, an invalid header, a missing Host), 431 for
// header fields over http.Server.MaxHeaderBytes, 501 for a
// Transfer-Encoding it does not support and 505 for an HTTP version
// other than 1.x; net/http writes them as text/plain straight to the
// connection, so no handler or middleware can see them. Serve both the
// public and the admin handler on wrapped listeners.
//
// The status is kept, the connection is still closed after the answer,
// and everything else written to the connection passes through as is.
func WrapListener(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return jsonErrorConn{c}, nil
}

// jsonErrorConn rewrites net/http's own error answers; see WrapListener.
type jsonErrorConn struct{ net.Conn }

// Write writes p, or the JSON version of p if p is one of net/http's own
// error answers. net/http writes each of those with a single Write
// (fmt.Fprintf) on the bare connection, so one Write is all there is to
// look at.
func (c jsonErrorConn) Write(p []byte) (int, error) {
	b, ok := rewriteRefusal(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(b); err != nil {
		return 0, err // what reached the client is no prefix of p
	}
	return len(p), nil
}

// CloseWrite half-closes the connection when the underlying one can:
// net/http does so after a 431, so that the client reads the answer
// before the connection is reset under the rest of its request.
func (c jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// refusalHeaders are the headers, and the blank line, that net/http sends
// with its own error answers and with nothing else (see "errorHeaders" in
// net/http's server.go). A handler's response has a Date, Content-Length
// or Transfer-Encoding header among these, unless the handler works
// hard at it; and its body would also have to repeat its status line.
const refusalHeaders = "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// unsupportedTEBody is net/http's body for a 501; its other answers
// repeat the status line as the body.
const unsupportedTEBody = "Unsupported transfer encoding"

// rewriteRefusal returns the JSON answer to send instead of p, and
// whether p is one of net/http's own error answers that classify knows.
// p must be exactly such an answer, in full:
//
//	HTTP/1.1 <status> <status text>[: <detail>]\r\n<refusalHeaders><body>
//
// where body is "<status> <status text>[: <detail>]", or
// unsupportedTEBody with 501. Anything else is left alone.
func rewriteRefusal(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) {
		return nil, false
	}
	line, rest, ok := bytes.Cut(p[len(proto):], []byte("\r\n"))
	if !ok || !bytes.HasPrefix(rest, []byte(refusalHeaders)) || len(line) < len("400 ") || line[3] != ' ' {
		return nil, false
	}
	status, err := strconv.Atoi(string(line[:3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	body := rest[len(refusalHeaders):]
	if !bytes.Equal(body, line) && !(status == http.StatusNotImplemented && string(body) == unsupportedTEBody) {
		return nil, false
	}
	text, detail := string(line[4:]), ""
	if text != http.StatusText(status) {
		var found bool
		if detail, found = strings.CutPrefix(text, http.StatusText(status)+": "); !found {
			return nil, false
		}
	}
	pr := classify(&refusedError{status: status, detail: detail})
	if pr.status != status {
		return nil, false // not in the table: net/http's answer stays
	}
	js, err := json.Marshal(errorBody{Error: errorJSON{Code: pr.code, Message: pr.message}})
	if err != nil { // cannot happen: the body is strings only
		return nil, false
	}
	js = append(js, '\n')
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"+
		"%s: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		status, http.StatusText(status), RequestIDHeader, rand.Text(), len(js))
	return append([]byte(head), js...), true
}
