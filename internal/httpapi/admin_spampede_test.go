package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/httpapi"
	"github.com/apollo-platform/apollo/internal/redisstore"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// fakeSpampede is an in-memory httpapi.Spampede that saves as the app
// does: validate, compare the edited version with the stored one, save as
// the next version, apply.
type fakeSpampede struct {
	mu      sync.Mutex
	rules   spampede.RuleSet
	cells   []spampede.CellState
	saveErr error // when set, SaveRules fails with it
	saved   []spampede.RuleSet
	gotNow  time.Time
	gotTop  int
}

func (f *fakeSpampede) Rules() spampede.RuleSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rules
}

func (f *fakeSpampede) TrippedCells(now time.Time, top int) []spampede.CellState {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gotNow, f.gotTop = now, top
	return f.cells[:min(top, len(f.cells))]
}

func (f *fakeSpampede) SaveRules(_ context.Context, rs spampede.RuleSet) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.saveErr != nil {
		return f.saveErr
	}
	if err := rs.Validate(); err != nil {
		return err
	}
	if rs.Version != f.rules.Version {
		return fmt.Errorf("%w: version %d is stored, the edit is of version %d", redisstore.ErrRulesConflict, f.rules.Version, rs.Version)
	}
	rs.Version++
	f.saved = append(f.saved, rs)
	f.rules = rs
	return nil
}

const validRules = `{"version":1,"rules":[{"name":"sg","min_lat":1.15,"max_lat":1.5,"min_lng":103.55,"max_lng":104.1,` +
	`"cell_bits":30,"bucket_seconds":60,"threshold":20,"hold_down_seconds":60,"shadow":false}]}`

func TestAdminSpampede(t *testing.T) {
	sgt := time.FixedZone("SGT", 8*3600)
	seedCells := []spampede.CellState{
		{Key: "car:w21z7", Rule: "sg", Count: 31.5, Until: testNow.Add(time.Minute).In(sgt)},
		{Key: "bike:w21z6", Rule: "sg", Count: 20, Until: testNow.Add(30 * time.Second), Shadow: true},
	}
	put := func(body string) request {
		return request{method: "PUT", target: "/v1/spampede/rules", body: body}
	}
	tests := []struct {
		name       string
		req        request
		setup      func(*fakeSpampede)
		wantStatus int
		wantCode   httpapi.Code
		wantBody   string // the whole body, for successes; a substring of the message, for errors
		check      func(*testing.T, *fakeSpampede)
	}{
		{name: "rules", req: request{method: "GET", target: "/v1/spampede/rules"}, wantStatus: 200,
			wantBody: `{"version":1,"rules":[{"name":"singapore","min_lat":1.15,"max_lat":1.5,"min_lng":103.55,"max_lng":104.1,` +
				`"cell_bits":30,"bucket_seconds":60,"threshold":20,"hold_down_seconds":60,"shadow":false}]}`},
		{name: "no rules is an empty list", req: request{method: "GET", target: "/v1/spampede/rules"},
			setup: func(f *fakeSpampede) { f.rules = spampede.RuleSet{} }, wantStatus: 200, wantBody: `{"version":0,"rules":[]}`},
		{name: "save", req: put(validRules), wantStatus: 200,
			wantBody: strings.Replace(validRules, `"version":1`, `"version":2`, 1),
			check: func(t *testing.T, f *fakeSpampede) {
				if len(f.saved) != 1 || f.saved[0].Rules[0].Name != "sg" {
					t.Errorf("saved %+v", f.saved)
				}
			}},
		{name: "save no rules", req: put(`{"version":1,"rules":[]}`), wantStatus: 200, wantBody: `{"version":2,"rules":[]}`},
		{name: "save an edit of version 0", req: put(`{"version":0,"rules":[]}`), setup: func(f *fakeSpampede) { f.rules = spampede.RuleSet{} },
			wantStatus: 200, wantBody: `{"version":1,"rules":[]}`},
		{name: "an edit of an old version", req: put(validRules), setup: func(f *fakeSpampede) { f.rules.Version = 5 },
			wantStatus: 409, wantCode: httpapi.CodeConflict, wantBody: "the rules changed since the version you edited; GET them, reapply your edit and PUT again",
			check: func(t *testing.T, f *fakeSpampede) {
				if len(f.saved) != 0 || f.rules.Version != 5 {
					t.Errorf("saved %+v; in force %+v", f.saved, f.rules)
				}
			}},
		{name: "an edit of a version from the future", req: put(strings.Replace(validRules, `"version":1`, `"version":2`, 1)),
			wantStatus: 409, wantCode: httpapi.CodeConflict, wantBody: "the rules changed since the version you edited"},
		{name: "the conflict as the store words it", req: put(validRules),
			setup: func(f *fakeSpampede) {
				f.saveErr = fmt.Errorf("save: %w: version 9 is stored", redisstore.ErrRulesConflict)
			},
			wantStatus: 409, wantCode: httpapi.CodeConflict, wantBody: "the rules changed since the version you edited"},
		{name: "no version", req: put(`{"rules":[]}`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument,
			wantBody: "version is required: the version of the rules the edit was made from, as GET returned it"},
		{name: "version null", req: put(`{"version":null,"rules":[]}`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "version is required"},
		{name: "a negative version", req: put(`{"version":-1,"rules":[]}`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "version is required"},
		{name: "invalid rule", req: put(strings.Replace(validRules, `"cell_bits":30`, `"cell_bits":5`, 1)),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: `rules are invalid: rule 0 ("sg"): cell_bits must be within [10, 40], got 5`},
		{name: "every invalid rule, on one line", req: put(`{"rules":[{"name":"a","min_lat":2,"max_lat":1,"min_lng":1,"max_lng":2,"cell_bits":30,"bucket_seconds":0,"threshold":1},` +
			`{"name":"a","min_lat":1,"max_lat":2,"min_lng":1,"max_lng":2,"cell_bits":30,"bucket_seconds":60,"threshold":0}]}`),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument,
			wantBody: `box must have min < max; bucket_seconds must be within [1, 3600], got 0; rule 1 ("a"): threshold must be at least 1, got 0; rule 1: duplicate name "a"`},
		{name: "unknown field", req: put(strings.Replace(validRules, `"threshold"`, `"thresh"`, 1)),
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: `rules are invalid: json: unknown field "thresh"`},
		{name: "a rule of the wrong type", req: put(`{"rules":{}}`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "rules are invalid"},
		{name: "null", req: put(`null`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "rules is required; send [] to remove every rule"},
		{name: "no rules list", req: put(`{"version":3}`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "rules is required"},
		{name: "rules null", req: put(`{"rules":null}`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "rules is required"},
		{name: "not JSON", req: put(`{rules}`), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "body is not valid JSON"},
		{name: "empty", req: request{method: "PUT", target: "/v1/spampede/rules", contentType: "application/json"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "body must not be empty"},
		{name: "two values", req: put(validRules + validRules), wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "single JSON value"},
		{name: "not JSON media", req: request{method: "PUT", target: "/v1/spampede/rules", body: validRules, contentType: "text/yaml"},
			wantStatus: 415, wantCode: httpapi.CodeUnsupportedMediaType},
		{name: "over 1 MiB", req: put(`{"rules":[],"pad":"` + strings.Repeat("x", 1<<20) + `"}`),
			wantStatus: 413, wantCode: httpapi.CodePayloadTooLarge, wantBody: "1048576 bytes"},
		{name: "store down", req: put(validRules), setup: func(f *fakeSpampede) { f.saveErr = fmt.Errorf("save: %w", redisstore.ErrUnavailable) },
			wantStatus: 503, wantCode: httpapi.CodeUnavailable},
		{name: "store fails oddly", req: put(validRules), setup: func(f *fakeSpampede) { f.saveErr = errors.New("10.0.0.7: READONLY") },
			wantStatus: 500, wantCode: httpapi.CodeInternal, wantBody: "internal error"},

		{name: "cells", req: request{method: "GET", target: "/v1/spampede/cells"}, wantStatus: 200,
			wantBody: `{"cells":[{"cell":"car:w21z7","rule":"sg","count":31.5,"until":"2024-03-01T12:01:00Z","shadow":false},` +
				`{"cell":"bike:w21z6","rule":"sg","count":20,"until":"2024-03-01T12:00:30Z","shadow":true}]}`,
			check: func(t *testing.T, f *fakeSpampede) {
				if f.gotTop != 20 || !f.gotNow.Equal(testNow) {
					t.Errorf("TrippedCells(%v, %d), want (%v, 20)", f.gotNow, f.gotTop, testNow)
				}
			}},
		{name: "top cell", req: request{method: "GET", target: "/v1/spampede/cells?top=1"}, wantStatus: 200,
			wantBody: `{"cells":[{"cell":"car:w21z7","rule":"sg","count":31.5,"until":"2024-03-01T12:01:00Z","shadow":false}]}`},
		{name: "most cells", req: request{method: "GET", target: "/v1/spampede/cells?top=1000"}, wantStatus: 200,
			check: func(t *testing.T, f *fakeSpampede) {
				if f.gotTop != 1000 {
					t.Errorf("top = %d", f.gotTop)
				}
			}},
		{name: "no cells is an empty list", req: request{method: "GET", target: "/v1/spampede/cells"},
			setup: func(f *fakeSpampede) { f.cells = nil }, wantStatus: 200, wantBody: `{"cells":[]}`},
		{name: "top zero", req: request{method: "GET", target: "/v1/spampede/cells?top=0"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "top must be within [1, 1000]"},
		{name: "top too many", req: request{method: "GET", target: "/v1/spampede/cells?top=1001"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "top must be within [1, 1000]"},
		{name: "top not a number", req: request{method: "GET", target: "/v1/spampede/cells?top=all"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "top must be an integer"},
		{name: "top twice", req: request{method: "GET", target: "/v1/spampede/cells?top=1&top=2"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: "top must be given once"},
		{name: "unknown parameter", req: request{method: "GET", target: "/v1/spampede/cells?limit=2"},
			wantStatus: 400, wantCode: httpapi.CodeInvalidArgument, wantBody: `unknown parameter "limit"`},

		{name: "wrong method", req: request{method: "DELETE", target: "/v1/spampede/rules"},
			wantStatus: 405, wantCode: httpapi.CodeMethodNotAllowed, wantBody: "allowed: GET, HEAD, PUT"},
		{name: "unknown path", req: request{method: "GET", target: "/v1/spampede/rule"},
			wantStatus: 404, wantCode: httpapi.CodeNotFound, wantBody: "no such route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSpampede{rules: spampede.DefaultRuleSet(), cells: slices.Clone(seedCells)}
			if tt.setup != nil {
				tt.setup(f)
			}
			logs := &syncBuffer{}
			h := &harness{handler: httpapi.NewAdmin(httpapi.AdminDeps{Spampede: f, Now: func() time.Time { return testNow },
				Log: slog.New(slog.NewJSONHandler(logs, nil)), Token: "0123456789abcdef-admin"})}
			req := tt.req
			if req.header == nil {
				req.header = http.Header{"Authorization": {"Bearer 0123456789abcdef-admin"}}
			}
			rec := h.do(req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if tt.wantCode == "" {
				if got := rec.Body.String(); tt.wantBody != "" && got != tt.wantBody+"\n" {
					t.Errorf("body\n got %s\nwant %s", got, tt.wantBody)
				}
			} else {
				e := decodeError(t, rec)
				if e.Error.Code != tt.wantCode || !strings.Contains(e.Error.Message, tt.wantBody) {
					t.Errorf("error %+v, want %s containing %q", e.Error, tt.wantCode, tt.wantBody)
				}
				if strings.Contains(rec.Body.String(), "10.0.0.7") {
					t.Errorf("internal detail leaked: %s", rec.Body)
				}
			}
			if tt.wantStatus == 500 && !strings.Contains(logs.String(), "10.0.0.7") {
				t.Errorf("the unexpected error was not logged: %s", logs)
			}
			if tt.check != nil {
				tt.check(t, f)
			}
		})
	}
}

func TestAdminSpampedeDisabled(t *testing.T) {
	h := &harness{handler: httpapi.NewAdmin(httpapi.AdminDeps{})}
	for _, req := range []request{
		{method: "GET", target: "/v1/spampede/rules"},
		{method: "PUT", target: "/v1/spampede/rules", body: validRules},
		{method: "GET", target: "/v1/spampede/cells?top=5"},
	} {
		t.Run(req.method+" "+req.target, func(t *testing.T) {
			rec := h.do(req)
			e := decodeError(t, rec)
			if rec.Code != http.StatusServiceUnavailable || e.Error.Code != httpapi.CodeUnavailable || e.Error.Message != "spampede is not enabled" {
				t.Errorf("got %d %+v, want 503 spampede is not enabled", rec.Code, e.Error)
			}
		})
	}
	// The other admin routes do not depend on it.
	if rec := h.do(request{method: "GET", target: "/livez"}); rec.Code != 200 {
		t.Errorf("/livez = %d", rec.Code)
	}
}
