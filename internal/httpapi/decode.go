package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// decodeBody decodes r's body into v, strictly: Content-Type must be
// application/json (parameters allowed), the body at most limit bytes, one
// JSON value with no unknown fields and nothing after it. Every failure is
// an error classify maps to a 4xx, never a 5xx.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := readJSONBody(w, r, limit, nil)
	if err != nil {
		return err
	}
	return unmarshalStrict(body, v)
}

// maxBodyPrealloc is the most readJSONBody sets aside for a body before
// reading it; a larger one grows as it arrives.
const maxBodyPrealloc = 16 << 10

// readJSONBody checks r's Content-Type and reads its body, at most limit
// bytes, appending to buf. Reading it whole before decoding lets a
// handler try a fast path on the bytes (scanIDs) and fall back to
// unmarshalStrict, with one read.
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64, buf []byte) ([]byte, error) {
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	// A declared length over the limit is refused before reading a byte.
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	// Room for the declared length (+1 to see EOF without growing), but
	// no more than a usual body before any of it has arrived: a client
	// declaring a megabyte and sending nothing holds no megabyte.
	if n := min(int(r.ContentLength)+1, maxBodyPrealloc); n > cap(buf)-len(buf) {
		buf = append(make([]byte, 0, len(buf)+n), buf...)
	}
	body := http.MaxBytesReader(innermost(w), r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, bodyError(err)
		}
	}
}

// unmarshalStrict decodes body into v as decodeBody does.
func unmarshalStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	// Exactly one value: "{}{}" or "{} x" is a client bug worth reporting,
	// not something to half-accept.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("body", "must hold a single JSON value with nothing after it")
	}
	return nil
}

// decodeOptionalBody is decodeBody for a body that may be left out. No
// body at all, whatever the Content-Type, reports false and no error;
// any body must pass decodeBody.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, limit int64, v any) (bool, error) {
	if r.ContentLength == 0 {
		return false, nil
	}
	if r.ContentLength < 0 { // length unknown (chunked): look for a first byte
		br := bufio.NewReaderSize(r.Body, 16)
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			return false, nil
		}
		// Any other error recurs in decodeBody, which reports it.
		r = r.WithContext(r.Context())
		r.Body = struct {
			io.Reader
			io.Closer
		}{br, r.Body}
	}
	return true, decodeBody(w, r, limit, v)
}

// innermost unwraps middleware writers. MaxBytesReader tells net/http's
// own writer that the limit was hit, so the server closes the connection
// rather than reading the rest of an oversized body; a wrapper would hide
// that.
func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

func checkJSONContentType(header string) error {
	if header == "" {
		return &mediaTypeError{}
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil || mt != "application/json" {
		return &mediaTypeError{got: header}
	}
	return nil
}

// bodyError turns a decoding error into one a client can act on, without
// echoing more than a short piece of its input.
func bodyError(err error) error {
	var (
		tooLarge  *http.MaxBytesError
		syntax    *json.SyntaxError
		typeError *json.UnmarshalTypeError
		timeError *time.ParseError
	)
	switch {
	case errors.As(err, &tooLarge):
		return err
	case errors.Is(err, io.EOF):
		return invalid("body", "must not be empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("body", "is truncated JSON")
	case errors.As(err, &syntax):
		return invalid("body", "is not valid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typeError):
		if typeError.Field == "" {
			return invalid("body", "must be %s", jsonKind(typeError.Type))
		}
		// Field names the array, not the element, for a bad element of
		// an array; this wording is right for both. Value is e.g.
		// "number 1e400": keep the kind only, never the client's digits.
		got, _, _ := strings.Cut(typeError.Value, " ")
		return invalid(fmt.Sprintf("%.64s", typeError.Field), "has a JSON %.16s where %s is expected", got, jsonKind(typeError.Type))
	case errors.As(err, &timeError):
		// encoding/json does not say which field; reserved_until is the
		// only time a request carries.
		return invalid("body", "has a time that is not RFC 3339, such as 2024-03-01T12:05:00Z")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no type for this error; the field name is
		// quoted at the end of its message.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if unquoted, err := strconv.Unquote(name); err == nil {
			name = unquoted
		}
		return invalid("body", "has unknown field %.64q", name)
	}
	return invalid("body", "is not a valid request")
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return "an RFC 3339 time string"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a finite number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of another type"
}

// invalid builds the error for one malformed input; its message is
// "<field> <reason>" and classify shows it to the client.
func invalid(field, format string, args ...any) error {
	return &driver.InvalidArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// validateID checks an identifier with the driver package's rule, reporting
// it under the client's name for it (e.g. "booking_id").
func validateID(field, id string) error {
	return renameField(driver.ValidateID(id), field)
}

// nestField returns err reported under parent.field, if it names a field:
// "lat" inside "pickup" becomes "pickup.lat".
func nestField(err error, parent string) error {
	var arg *driver.InvalidArgumentError
	if errors.As(err, &arg) {
		return &driver.InvalidArgumentError{Field: parent + "." + arg.Field, Reason: arg.Reason, Err: arg.Err}
	}
	return err
}

// renameField returns err reported under field, if it names a field.
func renameField(err error, field string) error {
	var arg *driver.InvalidArgumentError
	if errors.As(err, &arg) {
		return &driver.InvalidArgumentError{Field: field, Reason: arg.Reason, Err: arg.Err}
	}
	return err
}
