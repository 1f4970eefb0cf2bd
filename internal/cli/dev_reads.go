package cli

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/sim"
)

// devReads is the read side of a rider app under apollo dev: batch reads
// of drivers' availability through the instances' HTTP APIs in turn, as
// through a load balancer, the 2019 incident's workload. Without reads a
// replica nobody reads from can die unnoticed, and the console would have
// nothing to show.
type devReads struct {
	apis    []string
	drivers int
	every   time.Duration
	batch   int
	client  *http.Client

	sent, ok, failed atomic.Int64 // failed: not answered 200, or not answered
}

func newDevReads(apis []string, drivers int) *devReads {
	return &devReads{apis: apis, drivers: drivers, every: 50 * time.Millisecond, batch: 20,
		client: &http.Client{Timeout: 2 * time.Second}}
}

// run reads until ctx ends; its caller owns the goroutine.
func (d *devReads) run(ctx context.Context) {
	rng := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d.read(ctx, d.apis[i%len(d.apis)], rng)
	}
}

func (d *devReads) read(ctx context.Context, api string, rng *rand.Rand) {
	ids := make([]string, d.batch)
	for k := range ids {
		ids[k] = fmt.Sprintf("%q", sim.ID(rng.IntN(d.drivers)))
	}
	body := `{"ids":[` + strings.Join(ids, ",") + `]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/v1/drivers/batch-get", strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	d.sent.Add(1)
	resp, err := d.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			d.failed.Add(1)
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		d.ok.Add(1)
	} else {
		d.failed.Add(1)
	}
}
