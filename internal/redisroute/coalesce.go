package redisroute

import (
	"context"
	"runtime"
	"sync"

	"github.com/redis/go-redis/v9"
)

// coalescer merges the plain reads that concurrent calls send to one node
// into fewer pipelines. Up to `after` sub-pipelines go to the node at once;
// once that many are in flight, further reads queue, and when a pipeline
// returns, everything queued goes out in one (sent by the first queued
// attempt's own sender: no goroutine is added). A read that takes a free
// slot yields once before it sends, and takes along what queued meanwhile:
// requests that arrive together (an HTTP server's, readied by one network
// poll) would otherwise each send alone, one after another, while the
// node was idle. Fewer, deeper pipelines cost fewer writes, reads and pool
// checkouts per command when the node is busy, and nothing when it is not.
//
// Only plain reads are merged: no ASKING (it admits the one command after
// it, which must stay its neighbour), no fence or WAIT (WAIT counts every
// write sent before it on the connection), no write, and none of the
// legacy policy's (sent with their caller's context). A merged pipeline
// changes no command's meaning: each keeps its own reply or error, and a
// failure of the pipeline as a whole (a handshake refused) reaches every
// command, as it would have had each gone alone (see stampPipelineErr,
// applied to the merged pipeline). What merging does change is shared
// fate: go-redis fails every command of a pipeline whose connection breaks
// or times out, those answered before the break included, so such a break
// fails every merged attempt, not only the one whose connection it would
// have been; and a merged pipeline is one answer for the watchdog, so one
// slower than StallAfter makes a busy node look stalled. Both cost retries
// and hedges, never a wrong answer. And the node's latency samples (which
// set hedge delays and the nearest pick) now include the time a read
// waited in the queue, which is part of what a caller waits. It is on by
// default (CoalesceAfter 1): on a quiet machine it brings the router's CPU
// per call to within a few percent of the plain client's (the README's
// throughput figures).
type coalescer struct {
	after int // sub-pipelines in flight before reads queue; 0: never merge

	mu       sync.Mutex
	inFlight int
	queued   []*queuedRead
}

// queuedRead is one attempt's reads waiting for a merged pipeline.
type queuedRead struct {
	wire []redis.Cmder
	err  error         // the first error among wire once sent, set before done closes
	lead []*queuedRead // set for the attempt elected to send the merged pipeline
	done chan struct{}
}

// exec sends wire, a plain-read attempt's commands, through p: at once if
// fewer than `after` pipelines are in flight, otherwise merged with the
// reads queued meanwhile.
func (q *coalescer) exec(ctx context.Context, p pipeliner, wire []redis.Cmder) error {
	if q.after == 0 {
		return execStamped(ctx, p, wire)
	}
	q.mu.Lock()
	if q.inFlight < q.after {
		q.inFlight++
		q.mu.Unlock()
		// Yield once before sending: reads made runnable by the same wake-up
		// (a batch of requests the network poller readied at once) run up to
		// here, find the slot taken and queue, and go out in this pipeline
		// instead of one each. With nothing else runnable, it costs a trip
		// through the scheduler; with work runnable, it delays the send by
		// that work, which would otherwise have waited for this pipeline's
		// answer before merging.
		runtime.Gosched()
		if batch := q.take(); len(batch) > 0 {
			me := &queuedRead{wire: wire}
			q.flush(ctx, p, append([]*queuedRead{me}, batch...))
			q.handOn()
			return me.err
		}
		err := execStamped(ctx, p, wire)
		q.handOn()
		return err
	}
	me := &queuedRead{wire: wire, done: make(chan struct{})}
	q.queued = append(q.queued, me)
	q.mu.Unlock()
	<-me.done
	if me.lead != nil {
		q.flush(ctx, p, me.lead)
		q.handOn()
	}
	return me.err
}

// handOn ends a pipeline in flight: the reads queued meanwhile are handed
// to the first of them to send merged, or the slot is freed.
func (q *coalescer) handOn() {
	q.mu.Lock()
	batch := q.queued
	q.queued = nil
	if len(batch) == 0 {
		q.inFlight--
	}
	q.mu.Unlock()
	if len(batch) > 0 {
		batch[0].lead = batch
		close(batch[0].done)
	}
}

// take empties the queue: the reads queued since the caller took its slot,
// to go out in the caller's pipeline.
func (q *coalescer) take() []*queuedRead {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.queued
	q.queued = nil
	return batch
}

// flush sends the queued reads of batch as one pipeline and gives each
// its outcome; batch[0] is the caller's own, already woken (or never
// queued).
func (q *coalescer) flush(ctx context.Context, p pipeliner, batch []*queuedRead) {
	n := 0
	for _, r := range batch {
		n += len(r.wire)
	}
	wire := make([]redis.Cmder, 0, n)
	for _, r := range batch {
		wire = append(wire, r.wire...)
	}
	execStamped(ctx, p, wire)
	for i, r := range batch {
		// What its own pipeline would have returned: its first error.
		r.err = firstErr(r.wire)
		if i > 0 {
			close(r.done)
		}
	}
}

// firstErr is the first error among cmds, as go-redis reports a pipeline's.
func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return err
		}
	}
	return nil
}
