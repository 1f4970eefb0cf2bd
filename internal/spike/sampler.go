package spike

import (
	"context"
	"sync"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
)

// sampler reads every node's total_commands_processed once a second: the
// Redis work the run caused, as Redis itself counts it.
type sampler struct {
	nodes []*localcluster.Node
	mu    sync.Mutex
	at    []time.Time
	total []int64
}

func newSampler(nodes []*localcluster.Node) *sampler { return &sampler{nodes: nodes} }

func (s *sampler) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *sampler) sample(ctx context.Context) {
	var sum int64
	for _, n := range s.nodes {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		info, err := n.Info(cctx, "stats")
		cancel()
		if err != nil {
			return // a paused node: skip this second rather than under-count it
		}
		sum += localcluster.InfoField(info, "total_commands_processed")
	}
	s.mu.Lock()
	s.at, s.total = append(s.at, time.Now()), append(s.total, sum)
	s.mu.Unlock()
}

// perSecond is the command rate in each second since start (the rate of
// the sample interval that ends in it), and the total.
func (s *sampler) perSecond(start time.Time, seconds int) ([]float64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]float64, seconds)
	for i := 1; i < len(s.at); i++ {
		sec := int(s.at[i].Sub(start).Seconds())
		if sec < 0 || sec >= seconds {
			continue
		}
		out[sec] = float64(s.total[i]-s.total[i-1]) / s.at[i].Sub(s.at[i-1]).Seconds()
	}
	var total int64
	if n := len(s.total); n > 1 {
		total = s.total[n-1] - s.total[0]
	}
	return out, total
}
