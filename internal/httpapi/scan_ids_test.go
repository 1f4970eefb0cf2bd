package httpapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// FuzzScanIDsIsUnmarshal pins the fast path of the batch-get body to
// encoding/json: whatever scanIDs accepts, unmarshalStrict accepts too,
// with the same ids.
func FuzzScanIDsIsUnmarshal(f *testing.F) {
	for _, body := range []string{
		`{"ids":["d-1","d-2"]}`,
		" \t\n{ \"ids\" :\r[ \"a\" , \"b.c:d_e-f\" ] } \n",
		`{"ids":[]}`,
		`{"ids":["a"]}{}`,
		`{"ids":["a"],"ids":["b"]}`,
		`{"IDS":["a"]}`,
		`{"ids":["a\u0041"]}`,
		`{"ids":["é"]}`,
		`{"ids":null}`,
		`{"ids":["a",]}`,
		`{"ids":["a"]`,
		`{"ids":["a" "b"]}`,
		`{"ids":[1]}`,
		`{"ids":["a"],"x":1}`,
		"",
	} {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ids, ok := scanIDs(body, nil)
		if !ok {
			return
		}
		var req batchRequest
		if err := unmarshalStrict([]byte(body), &req); err != nil {
			t.Fatalf("scanIDs(%q) = %q, but unmarshalStrict refuses it: %v", body, ids, err)
		}
		if !slices.Equal(ids, req.IDs) && (len(ids) != 0 || len(req.IDs) != 0) {
			t.Fatalf("scanIDs(%q) = %q, unmarshalStrict gives %q", body, ids, req.IDs)
		}
	})
}

func TestScanIDsReadsTheUsualBodyAndLeavesTheRest(t *testing.T) {
	tests := []struct {
		body string
		want []string // nil: left to unmarshalStrict
	}{
		{`{"ids":["d-1","d-2"]}`, []string{"d-1", "d-2"}},
		{" {\n\t\"ids\" : [ \"a\" ,\"b\" ] }\r\n", []string{"a", "b"}},
		{`{"ids":[]}`, []string{}},
		{`{"IDS":["a"]}`, nil},              // encoding/json matches field names without case
		{`{"ids":["a"],"ids":["b"]}`, nil},  // a repeated field: the last wins there
		{`{"ids":["a\u0041"]}`, nil},        // an escape
		{`{"ids":["a b"]}`, nil},            // not an id character: validation's error
		{`{"ids":["a"]} x`, nil},            // trailing data
		{`{"ids":["a",]}`, nil},             // a syntax error
		{`{"ids":null}`, nil},               // not a list
		{`{"ids":["a"],"other":true}`, nil}, // an unknown field
		{`{"ids":["a"]`, nil},               // truncated
	}
	for _, tt := range tests {
		got, ok := scanIDs(tt.body, nil)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("scanIDs(%q) = %q, %v; want %q", tt.body, got, ok, tt.want)
		}
	}
}

// A body declared large is not set aside in full before it arrives: a
// client declaring a megabyte and sending two bytes holds no megabyte.
func TestReadJSONBodySetsAsideNoMoreThanAUsualBodyBeforeReading(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/v1/drivers/batch-get", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = 1 << 20
	body, err := readJSONBody(httptest.NewRecorder(), r, 2<<20, nil)
	if err != nil || string(body) != "{}" || cap(body) > maxBodyPrealloc {
		t.Errorf("got %q (cap %d), %v; want {} in at most %d bytes", body, cap(body), err, maxBodyPrealloc)
	}
}
