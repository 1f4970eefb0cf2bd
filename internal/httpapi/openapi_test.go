package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/apollo-platform/apollo/internal/httpapi"
)

const specPath = "../../api/openapi.yaml"

// loadSpec loads and validates the OpenAPI document.
func loadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(specPath)
	if err != nil {
		t.Fatalf("load %s: %v", specPath, err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("%s is not valid OpenAPI: %v", specPath, err)
	}
	return doc
}

func TestOpenAPIDescribesExactlyTheRoutes(t *testing.T) {
	doc := loadSpec(t)
	var inSpec []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inSpec = append(inSpec, method+" "+path)
		}
	}
	served := httpapi.Routes()
	slices.Sort(inSpec)
	slices.Sort(served)
	if !slices.Equal(inSpec, served) {
		t.Errorf("spec operations %q\nserved routes   %q", inSpec, served)
	}
}

func TestOpenAPIErrorCodesAreCodes(t *testing.T) {
	doc := loadSpec(t)
	schema := doc.Components.Schemas["ErrorCode"]
	if schema == nil {
		t.Fatal("no ErrorCode schema")
	}
	var inSpec []string
	for _, v := range schema.Value.Enum {
		inSpec = append(inSpec, v.(string))
	}
	var codes []string
	for _, c := range httpapi.Codes() {
		codes = append(codes, string(c))
	}
	slices.Sort(inSpec)
	slices.Sort(codes)
	if !slices.Equal(inSpec, codes) {
		t.Errorf("spec codes %q, package codes %q", inSpec, codes)
	}
}

// checkSpec checks an exchange against the spec: the response body against
// the schema of its route and status, and the body of a successful
// request against the request schema. pattern is a Routes() entry, or ""
// for requests no route serves (only the error schema applies then).
func checkSpec(t testing.TB, doc *openapi3.T, pattern string, req request, rec *httptest.ResponseRecorder) {
	t.Helper()
	if req.method == http.MethodHead || rec.Code == http.StatusMovedPermanently {
		return
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var got any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("response is not JSON: %v: %q", err, rec.Body)
	}
	if pattern == "" {
		if err := doc.Components.Schemas["Error"].Value.VisitJSON(got); err != nil {
			t.Errorf("error response does not match the spec: %v\n%s", err, rec.Body)
		}
		return
	}
	method, path, _ := strings.Cut(pattern, " ")
	op := doc.Paths.Value(path).GetOperation(method)
	resp := op.Responses.Status(rec.Code)
	if resp == nil {
		resp = op.Responses.Default()
	}
	if resp == nil {
		t.Fatalf("%s: status %d is not in the spec", pattern, rec.Code)
	}
	if err := resp.Value.Content.Get("application/json").Schema.Value.VisitJSON(got); err != nil {
		t.Errorf("%s %d: response does not match the spec: %v\n%s", pattern, rec.Code, err, rec.Body)
	}
	// An accepted request's body must match the request schema; an
	// optional body may be left out.
	if rec.Code/100 == 2 && op.RequestBody != nil && (req.body != "" || op.RequestBody.Value.Required) {
		var body any
		if err := json.Unmarshal([]byte(req.body), &body); err != nil {
			t.Fatalf("accepted request body is not JSON: %v", err)
		}
		if err := op.RequestBody.Value.Content.Get("application/json").Schema.Value.VisitJSON(body); err != nil {
			t.Errorf("%s: accepted request body does not match the spec: %v\n%s", pattern, err, req.body)
		}
	}
}
