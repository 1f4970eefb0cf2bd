package httpapi_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"go.uber.org/goleak"

	"github.com/apollo-platform/apollo/internal/httpapi"
)

// rawWant is one response read off a raw connection.
type rawWant struct {
	status      int
	code        httpapi.Code // "": not an error from this package
	msg         string       // substring of the error message
	pattern     string       // the route that answered, for checkSpec; "" for none
	contentType string       // checked when code is ""
	body        string       // the whole body, checked when code and pattern are ""
}

// TestWrapListener: net/http's own answers to requests it refuses before
// any handler runs are JSON errors over a wrapped listener, and every other
// response is left as it was. The exchanges are raw bytes over TCP, since
// net/http's client would not send most of these requests.
func TestWrapListener(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHarness(t, newFake(seedDrivers()...), nil)
	mux := http.NewServeMux()
	mux.Handle("/", h.handler)
	// A handler answering what net/http answers to a garbage request, as
	// closely as a handler can: it must pass through untouched.
	mux.HandleFunc("GET /mimic", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Connection", "close")
		w.Header()["Date"] = nil
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "400 Bad Request")
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = httpapi.WrapListener(srv.Listener)
	// net/http allows 4096 bytes more, counted from what it reads off the
	// connection for the request: the pad below is well over either.
	srv.Config.MaxHeaderBytes = 1024
	srv.Start()
	defer srv.Close()

	const get = "GET /v1/drivers/drv-1 HTTP/1.1\r\nHost: apollo\r\n\r\n"
	oversized := "GET /v1/drivers/drv-1 HTTP/1.1\r\nHost: apollo\r\nX-Pad: " + strings.Repeat("x", 16<<10) + "\r\n\r\n"
	driver := rawWant{status: 200, pattern: "GET /v1/drivers/{id}", contentType: "application/json"}
	tooLarge := rawWant{status: 431, code: httpapi.CodeHeaderTooLarge, msg: "header fields are too large"}
	tests := []struct {
		name string
		send string
		want []rawWant
	}{
		{"a normal request", get, []rawWant{driver}},
		{"oversized header", oversized, []rawWant{tooLarge}},
		{"oversized header after a normal request on the same connection", get + oversized, []rawWant{driver, tooLarge}},
		{"unsupported Transfer-Encoding", "POST /v1/drivers/batch-get HTTP/1.1\r\nHost: apollo\r\nContent-Type: application/json\r\n" +
			"Transfer-Encoding: gzip, chunked\r\n\r\n", []rawWant{{status: 501, code: httpapi.CodeNotImplemented, msg: "Transfer-Encoding"}}},
		{"garbage request line", "HELLO APOLLO\r\n\r\n", []rawWant{{status: 400, code: httpapi.CodeBadRequest, msg: "malformed request"}}},
		{"malformed header line", "GET / HTTP/1.1\r\nHost: apollo\r\nno colon here\r\n\r\n",
			[]rawWant{{status: 400, code: httpapi.CodeBadRequest, msg: "malformed request"}}},
		{"missing Host, with net/http's detail", "GET /v1/drivers/drv-1 HTTP/1.1\r\n\r\n",
			[]rawWant{{status: 400, code: httpapi.CodeBadRequest, msg: "malformed request: missing required Host header"}}},
		{"unsupported HTTP version", "GET /v1/drivers/drv-1 HTTP/3.0\r\nHost: apollo\r\n\r\n",
			[]rawWant{{status: 505, code: httpapi.CodeHTTPVersionNotSupported, msg: "HTTP version"}}},
		{"a handler's own text/plain error", "GET /mimic HTTP/1.1\r\nHost: apollo\r\n\r\n",
			[]rawWant{{status: 400, contentType: "text/plain; charset=utf-8", body: "400 Bad Request"}}},
	}
	doc := loadSpec(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(conn, tt.send); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			var last *http.Response
			for i, want := range tt.want {
				last = readRawResponse(t, doc, br, want)
				if t.Failed() {
					t.Fatalf("response %d of %d failed", i+1, len(tt.want))
				}
			}
			if last.StatusCode < 400 {
				return // the connection stays open
			}
			// An error closes the connection, right after the body.
			if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
				t.Errorf("after the response: %q, %v; want the connection closed", rest, err)
			}
		})
	}
}

// readRawResponse reads one response from br and checks it against want.
func readRawResponse(t *testing.T, doc *openapi3.T, br *bufio.Reader, want rawWant) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	rec := httptest.NewRecorder()
	_, err = io.Copy(rec.Body, resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	rec.Code = resp.StatusCode
	for k, v := range resp.Header {
		rec.Header()[k] = v
	}
	if resp.StatusCode != want.status {
		t.Fatalf("status = %d, want %d; headers %v, body %q", resp.StatusCode, want.status, resp.Header, rec.Body)
	}
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
		t.Errorf("Content-Length = %q, body has %d bytes: %q", cl, rec.Body.Len(), rec.Body)
	}
	if want.code == "" {
		if ct := resp.Header.Get("Content-Type"); ct != want.contentType {
			t.Errorf("Content-Type = %q, want %q", ct, want.contentType)
		}
		if want.pattern == "" {
			if rec.Body.String() != want.body {
				t.Errorf("body = %q, want %q", rec.Body, want.body)
			}
			return resp
		}
		if resp.Header.Get("Date") == "" {
			t.Error("a handler's response lost its Date header")
		}
		checkSpec(t, doc, want.pattern, request{method: http.MethodGet}, rec)
		return resp
	}
	checkSpec(t, doc, "", request{method: http.MethodGet}, rec) // Content-Type and the error schema
	e := decodeError(t, rec)
	if e.Error.Code != want.code || !strings.Contains(e.Error.Message, want.msg) {
		t.Errorf("error = %+v, want code %s and a message containing %q", e.Error, want.code, want.msg)
	}
	if !resp.Close {
		t.Error("no Connection: close")
	}
	if resp.Header.Get(httpapi.RequestIDHeader) == "" {
		t.Error("no request id in the response")
	}
	return resp
}

// pipeListener accepts one end of a pipe, once.
type pipeListener struct {
	net.Listener // nil; only Accept is called
	conn         net.Conn
}

func (l pipeListener) Accept() (net.Conn, error) { return l.conn, nil }

// TestWrapListenerRewritesExactlyTheRefusals writes single raw writes
// through a wrapped connection: only an exact, whole answer of net/http's
// own, with a status the error table knows, is rewritten.
func TestWrapListenerRewritesExactlyTheRefusals(t *testing.T) {
	const hdr = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	tests := []struct {
		name     string
		write    string
		wantCode httpapi.Code // "": passed through as is
	}{
		{"431", "HTTP/1.1 431 Request Header Fields Too Large" + hdr + "431 Request Header Fields Too Large", httpapi.CodeHeaderTooLarge},
		{"501", "HTTP/1.1 501 Not Implemented" + hdr + "Unsupported transfer encoding", httpapi.CodeNotImplemented},
		{"400 with detail", "HTTP/1.1 400 Bad Request: invalid header name" + hdr + "400 Bad Request: invalid header name", httpapi.CodeBadRequest},
		{"a handler's response", "HTTP/1.1 400 Bad Request\r\nDate: Fri, 01 Mar 2024 12:00:00 GMT\r\nContent-Type: text/plain; charset=utf-8\r\n" +
			"Connection: close\r\n\r\n400 Bad Request", ""},
		{"a body write", `{"id":"drv-1"}`, ""},
		{"more than the answer", "HTTP/1.1 400 Bad Request" + hdr + "400 Bad RequestHTTP/1.1 200 OK\r\n", ""},
		{"half the answer", "HTTP/1.1 400 Bad Request" + hdr, ""},
		{"another body", "HTTP/1.1 400 Bad Request" + hdr + "Bad Request", ""},
		{"501 with the status as body", "HTTP/1.1 501 Not Implemented" + hdr + "501 Not Implemented", httpapi.CodeNotImplemented},
		{"another status text", "HTTP/1.1 400 Nope" + hdr + "400 Nope", ""},
		{"a status the table does not know", "HTTP/1.1 418 I'm a teapot" + hdr + "418 I'm a teapot", ""},
		{"a success", "HTTP/1.1 200 OK" + hdr + "200 OK", ""},
		{"HTTP/1.0", "HTTP/1.0 400 Bad Request" + hdr + "400 Bad Request", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, client := net.Pipe()
			defer client.Close()
			conn, err := httpapi.WrapListener(pipeListener{conn: server}).Accept()
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				n, err := conn.Write([]byte(tt.write))
				if err == nil && n != len(tt.write) {
					err = fmt.Errorf("Write = %d, want %d: the caller's bytes, whatever was sent", n, len(tt.write))
				}
				done <- errors.Join(err, conn.Close())
			}()
			got, err := io.ReadAll(client)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if tt.wantCode == "" {
				if string(got) != tt.write {
					t.Errorf("rewritten:\n%q\nwant as is:\n%q", got, tt.write)
				}
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
			if err != nil {
				t.Fatalf("%v: %q", err, got)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Code httpapi.Code } `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error.Code != tt.wantCode || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("got %q (%v), want code %s", got, err, tt.wantCode)
			}
		})
	}
}
