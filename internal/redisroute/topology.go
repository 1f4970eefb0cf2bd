package redisroute

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// shard is one primary and its replicas, as the last topology refresh saw them.
type shard struct {
	primary  *node
	replicas []*node
	rr       atomic.Uint32 // spreads reads over replicas
}

// nodes returns the primary first, then the replicas.
func (s *shard) nodes() []*node {
	return append([]*node{s.primary}, s.replicas...)
}

func (s *shard) healthyCount() int {
	n := 0
	for _, nd := range s.nodes() {
		if nd.healthy() {
			n++
		}
	}
	return n
}

// topology maps every slot to its shard. It is immutable once built and
// swapped atomically, so the request path reads it without locks.
type topology struct {
	slots  [numSlots]*shard
	shards []*shard
	nodes  []*node
	kept   map[*node]bool // nodes CLUSTER SLOTS left out, kept as replicas (omitted.go)
	at     time.Time      // when the slot map was fetched
}

// covered is how many slots t has a shard for.
func (t *topology) covered() int {
	n := 0
	for _, s := range t.slots {
		if s != nil {
			n++
		}
	}
	return n
}

// byAddr is t's nodes by address.
func (t *topology) byAddr() map[string]*node {
	m := make(map[string]*node, len(t.nodes))
	for _, n := range t.nodes {
		m[n.addr] = n
	}
	return m
}

// String lists the shards as "primary>replica,replica; ...", marking ejected nodes with "!".
func (t *topology) String() string {
	var b strings.Builder
	for i, s := range t.shards {
		if i > 0 {
			b.WriteString("; ")
		}
		for k, n := range s.nodes() {
			switch {
			case k == 1:
				b.WriteString(">")
			case k > 1:
				b.WriteString(",")
			}
			b.WriteString(n.addr)
			if !n.healthy() {
				b.WriteString("!")
			}
		}
	}
	return b.String()
}

func (t *topology) shardOf(n *node) *shard {
	// Without s.nodes(), which allocates: every acknowledged write's proof
	// asks this (proof.go).
	for _, s := range t.shards {
		if s.primary == n || slices.Contains(s.replicas, n) {
			return s
		}
	}
	return nil
}

// buildTopology turns CLUSTER SLOTS into a topology, reusing known nodes so
// their health survives a refresh.
func buildTopology(slots []redis.ClusterSlot, nodeFor func(addr string) *node) (*topology, error) {
	t := &topology{}
	byPrimary := map[string]*shard{}
	seen := map[*node]bool{}
	for _, r := range slots {
		if len(r.Nodes) == 0 || r.Start < 0 || r.End >= numSlots || r.Start > r.End {
			return nil, fmt.Errorf("malformed CLUSTER SLOTS range %d-%d", r.Start, r.End)
		}
		paddr := r.Nodes[0].Addr
		s, ok := byPrimary[paddr]
		if !ok {
			s = &shard{primary: nodeFor(paddr)}
			for _, rn := range r.Nodes[1:] {
				s.replicas = append(s.replicas, nodeFor(rn.Addr))
			}
			byPrimary[paddr] = s
			t.shards = append(t.shards, s)
			for _, n := range s.nodes() {
				if !seen[n] {
					seen[n] = true
					t.nodes = append(t.nodes, n)
				}
			}
		}
		for i := r.Start; i <= r.End; i++ {
			t.slots[i] = s
		}
	}
	if len(t.shards) == 0 {
		return nil, fmt.Errorf("CLUSTER SLOTS returned no slots")
	}
	return t, nil
}

func validAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p > 0 && p < 65536
}
