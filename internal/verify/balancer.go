package verify

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// balancer is the load balancer's health checks in front of the fleet: it
// asks every instance's /readyz every balancerEvery, takes an instance out
// after balancerFails answers missed in a row (a process paused or hung
// takes connections and answers nothing, which only a health check sees)
// and back at its first answer. The workload sends new requests to the
// instances it has in; requests already sent to one taken out are not
// helped, as with a real balancer.
type balancer struct {
	instances []*Instance
	client    *http.Client

	mu     sync.Mutex
	missed []int // answers missed in a row, by instance
}

const (
	balancerEvery = 250 * time.Millisecond
	balancerFails = 2
)

func newBalancer(instances []*Instance) *balancer {
	return &balancer{instances: instances, client: &http.Client{Timeout: balancerEvery}, missed: make([]int, len(instances))}
}

// run checks every instance until ctx ends.
func (b *balancer) run(ctx context.Context) {
	for sleep(ctx, balancerEvery) {
		var wg sync.WaitGroup
		for i, in := range b.instances {
			wg.Go(func() {
				ok := b.ready(ctx, in)
				b.mu.Lock()
				if ok {
					b.missed[i] = 0
				} else {
					b.missed[i]++
				}
				b.mu.Unlock()
			})
		}
		wg.Wait()
	}
}

// ready reports whether in answered its /readyz with 200.
func (b *balancer) ready(ctx context.Context, in *Instance) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.Admin()+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// in reports whether instance i is in: nil balancer, every one is.
func (b *balancer) in(i int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.missed[i] < balancerFails
}
