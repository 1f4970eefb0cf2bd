package verify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The balancer takes out an instance that misses its health checks (one
// hung, one draining) and the workload then sends new requests to the
// next one in; an instance answering again comes back.
func TestTheBalancerSendsNewRequestsAroundAnInstanceThatMissesItsHealthChecks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hung := make(chan struct{})
	servers := []*httptest.Server{
		httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})),
		httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hung:
			case <-r.Context().Done():
			}
		})),
		httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })),
	}
	var instances []*Instance
	for i, s := range servers {
		defer s.Close()
		instances = append(instances, &Instance{Name: "apollo-" + string(rune('0'+i)), api: s.URL + "/api", admin: s.URL})
	}
	w := &workload{instances: instances, health: newBalancer(instances)}
	for i := range instances {
		if got := w.inFrom(i); got != instances[i].api {
			t.Fatalf("before any check, inFrom(%d) = %s, want its own", i, got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.health.run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); w.health.in(1) || w.health.in(2); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hung and the draining instance were not taken out")
		}
	}
	if !w.health.in(0) {
		t.Error("the ready instance was taken out")
	}
	for i := range instances {
		if got := w.inFrom(i); got != instances[0].api {
			t.Errorf("inFrom(%d) = %s, want the one instance in", i, got)
		}
	}
	if got := w.after(instances[0].api); got != instances[0].api {
		t.Errorf("after the one in: %s, want itself", got)
	}
	close(hung) // it answers again (200)
	for deadline := time.Now().Add(10 * time.Second); !w.health.in(1); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the instance that answers again was not taken back")
		}
	}
	cancel()
	<-done
}
