package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/spampede"
)

// Spampede is what the admin API needs from the demand-spike filter and its
// shared rule store. It is declared here, by its consumer.
type Spampede interface {
	// Rules returns the rule set in force on this instance.
	Rules() spampede.RuleSet
	// TrippedCells lists up to top cells tripped at now, highest count first.
	TrippedCells(now time.Time, top int) []spampede.CellState
	// SaveRules validates rs, an edit of the rule set of version
	// rs.Version, stores it for every instance as version rs.Version+1 if
	// rs.Version is still the stored version, and applies it here. Saving
	// the same edit again succeeds. If another save got there first, it
	// fails with redisstore.ErrRulesConflict.
	SaveRules(ctx context.Context, rs spampede.RuleSet) error
}

// Bounds of the Spampede admin routes.
const (
	maxRulesBodyBytes = 1 << 20
	defaultTopCells   = 20
	maxTopCells       = 1000
	// maxRulesErrorLen bounds the validation message of a rejected rule
	// set, which lists every invalid rule.
	maxRulesErrorLen = 2048
)

// spampedeAdmin serves the Spampede routes of the admin listener.
type spampedeAdmin struct {
	responder
	filter Spampede
	now    func() time.Time
}

func (s *spampedeAdmin) routes() []route {
	return []route{
		{"GET /v1/spampede/rules", s.getRules},
		{"PUT /v1/spampede/rules", s.putRules},
		{"GET /v1/spampede/cells", s.cells},
	}
}

// getRules returns the rule set in force on this instance.
func (s *spampedeAdmin) getRules(w http.ResponseWriter, r *http.Request) {
	s.respond(w, r, rulesJSON(s.filter.Rules()))
}

// putRules replaces the rule set of every instance. The body is the rule
// set as GET returned it, edited: its "version" (required) is the version
// the edit was made from, and the save is a compare-and-set on it. The
// answer is the rule set then in force here, saved as version+1. If the
// rules were saved by someone else since, nothing is saved and the answer
// is 409 conflict: GET them, reapply the edit, PUT again. A 503 may mean
// the rules are stored but no replica confirmed them yet; PUTting the same
// body again is safe, and succeeds once they are confirmed.
func (s *spampedeAdmin) putRules(w http.ResponseWriter, r *http.Request) {
	// decodeBody checks the media type, the size and that the body is one
	// JSON value; ParseRuleSet then decodes it strictly and validates it.
	var raw json.RawMessage
	if err := decodeBody(w, r, maxRulesBodyBytes, &raw); err != nil {
		s.fail(w, r, err)
		return
	}
	rs, err := spampede.ParseRuleSet(raw)
	if err != nil {
		s.fail(w, r, rulesError(err))
		return
	}
	// A forgotten or null list would silently remove every rule.
	if rs.Rules == nil {
		s.fail(w, r, invalid("rules", "is required; send [] to remove every rule"))
		return
	}
	// A forgotten version would overwrite whatever is stored blindly.
	var edited struct {
		Version *int64 `json:"version"`
	}
	if err := json.Unmarshal(raw, &edited); err != nil || edited.Version == nil || *edited.Version < 0 {
		s.fail(w, r, invalid("version", "is required: the version of the rules the edit was made from, as GET returned it"))
		return
	}
	if err := s.filter.SaveRules(r.Context(), rs); err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, rulesJSON(s.filter.Rules()))
}

// rulesError turns ParseRuleSet's error, which lists every invalid rule,
// into one line for an operator. Only operators reach the admin listener,
// and the message is built from their own input, so it is shown whole
// (up to a bound) rather than reduced to its first invalid field.
func rulesError(err error) error {
	msg := strings.TrimPrefix(err.Error(), driver.ErrInvalidArgument.Error()+": ")
	msg = strings.TrimPrefix(msg, "rules: ") // ParseRuleSet's prefix for a decoding error
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	return invalid("rules", "are invalid: %.*s", maxRulesErrorLen, msg)
}

// rulesJSON always lists rules as an array, never null.
func rulesJSON(rs spampede.RuleSet) spampede.RuleSet {
	if rs.Rules == nil {
		rs.Rules = []spampede.Rule{}
	}
	return rs
}

// cellsResponse is the answer of GET /v1/spampede/cells.
type cellsResponse struct {
	Cells []cellJSON `json:"cells"`
}

// cellJSON is a tripped cell: CellState with its time in UTC.
type cellJSON struct {
	Cell   string    `json:"cell"`
	Rule   string    `json:"rule"`
	Count  float64   `json:"count"`
	Until  time.Time `json:"until"`
	Shadow bool      `json:"shadow"`
}

// cells lists the cells tripped now, highest count first: ?top= of them,
// 1 to 1000, 20 by default.
func (s *spampedeAdmin) cells(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.RawQuery, "top")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	top, err := q.intOr("top", defaultTopCells)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if top < 1 || top > maxTopCells {
		s.fail(w, r, invalid("top", "must be within [1, %d]", maxTopCells))
		return
	}
	states := s.filter.TrippedCells(s.now(), top)
	resp := cellsResponse{Cells: make([]cellJSON, 0, len(states))}
	for _, c := range states {
		resp.Cells = append(resp.Cells, cellJSON{Cell: c.Key, Rule: c.Rule, Count: c.Count, Until: c.Until.UTC(), Shadow: c.Shadow})
	}
	s.respond(w, r, resp)
}
