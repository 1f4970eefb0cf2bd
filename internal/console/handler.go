package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// maxFaultBody bounds a fault panel request.
const maxFaultBody = 4 << 10

// Handler serves the console under /console/. Its POST routes change
// things: the caller mounts it behind the admin token for every method
// but GET and HEAD.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/{$}", c.page)
	mux.HandleFunc("GET /console/static/{file}", c.file)
	mux.HandleFunc("GET /console/api/state", c.serveState)
	mux.HandleFunc("GET /console/charts/{name}", c.serveChart)
	mux.HandleFunc("POST /console/api/faults/node", c.faultNode)
	mux.HandleFunc("POST /console/api/faults/rainstorm", c.faultRain)
	mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "not_found", "no such console page: "+r.URL.Path)
	})
	return headers(mux)
}

// headers keeps the page to itself: nothing but this listener is loaded,
// and no other site may frame it.
func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	serveStatic(w, r, "index.html")
}

func (c *Console) file(w http.ResponseWriter, r *http.Request) {
	serveStatic(w, r, r.PathValue("file"))
}

func serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(static, path.Join("static", path.Clean("/" + name)[1:]))
	if err != nil {
		fail(w, http.StatusNotFound, "not_found", "no such console file: "+name)
		return
	}
	w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

func (c *Console) serveState(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, c.state(r.Context()))
}

func (c *Console) serveChart(w http.ResponseWriter, r *http.Request) {
	svg, ok := c.chart(strings.TrimSuffix(r.PathValue("name"), ".svg"))
	if !ok {
		fail(w, http.StatusNotFound, "not_found", "no such chart: "+r.PathValue("name"))
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = io.WriteString(w, svg)
}

// faultRequest is the body of the fault panel's routes.
type faultRequest struct {
	Action string `json:"action"`
	Node   string `json:"node"`
	On     *bool  `json:"on"`
}

func (c *Console) faultNode(w http.ResponseWriter, r *http.Request) {
	req, ok := c.faultBody(w, r)
	if !ok {
		return
	}
	if req.Action == "" || req.Node == "" {
		fail(w, http.StatusBadRequest, "invalid_argument", `a node fault needs "action" (kill, hang or resume) and "node" (host:port)`)
		return
	}
	c.faultDone(w, c.d.Faults.Node(r.Context(), req.Action, req.Node))
}

func (c *Console) faultRain(w http.ResponseWriter, r *http.Request) {
	req, ok := c.faultBody(w, r)
	if !ok {
		return
	}
	if req.On == nil {
		fail(w, http.StatusBadRequest, "invalid_argument", `a rainstorm needs "on": true or false`)
		return
	}
	c.faultDone(w, c.d.Faults.Rainstorm(r.Context(), *req.On))
}

// faultBody decodes a fault request strictly; ok is false once answered.
func (c *Console) faultBody(w http.ResponseWriter, r *http.Request) (faultRequest, bool) {
	var req faultRequest
	if c.d.Faults == nil {
		fail(w, http.StatusNotFound, "not_found", "the fault panel exists under apollo dev only")
		return req, false
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		fail(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as application/json")
		return req, false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxFaultBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, "invalid_argument", "the body must be one JSON object with action, node or on: "+err.Error())
		return req, false
	}
	return req, true
}

func (c *Console) faultDone(w http.ResponseWriter, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, c.d.Faults.View())
	case errors.Is(err, ErrUnknownAction):
		fail(w, http.StatusBadRequest, "invalid_argument", err.Error())
	case errors.Is(err, ErrUnknownNode):
		fail(w, http.StatusNotFound, "not_found", err.Error())
	default:
		c.d.Log.Warn("console: fault failed", "err", err)
		fail(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers the error shape of every Apollo API: a stable code and a
// message for people.
func fail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
