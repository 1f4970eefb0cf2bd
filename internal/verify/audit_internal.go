package verify

import (
	"fmt"
	"net/http"
	"slices"
)

// CodeInternalError: an answer was 500, an error the API did not classify.
const CodeInternalError = "internal_error"

// InternalErrors (every error has a stable code): no answer is a 500.
// Under any fault a failure is one the API can name (503 unavailable,
// 409, 404...); a 500 `internal` is an error no row of its table knows,
// the mark of a fault nobody wrote a test for (a refusal of the cluster's
// passed on as a reply to the command, a panic). One violation per kind
// of operation, listing its ops; the instances' logs name the error.
func InternalErrors(h History) []Violation {
	byKind := map[string][]Op{}
	for _, op := range h.Ops {
		if op.Status == http.StatusInternalServerError {
			byKind[string(op.Kind)] = append(byKind[string(op.Kind)], op)
		}
	}
	var out []Violation
	for _, k := range sortedKeys(byKind) {
		ops := byKind[k]
		var instances []string
		for _, op := range ops {
			if !slices.Contains(instances, op.Instance) {
				instances = append(instances, op.Instance)
			}
		}
		slices.Sort(instances)
		out = append(out, Violation{Code: CodeInternalError, Ops: opIDs(ops), Instances: instances,
			Message: fmt.Sprintf("%d %s answers were 500 %q, an error the API does not classify (the first, op #%d, at %s); the instances' logs name it",
				len(ops), k, ops[0].Code, ops[0].ID, runTime(ops[0].Return))})
	}
	return out
}
