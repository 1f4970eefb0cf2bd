package redisroute

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// pipeliner sends one sub-pipeline to one node. It is the seam between the
// call state machine and the wire: production uses a go-redis client, tests
// a scripted fake, so that classification, hedging, retries and ambiguity
// can be pinned down without a cluster.
//
// Exec runs cmds in order on one connection and fills in their replies. Its
// error is whatever the client reports for the whole pipeline; it may or may
// not also be set on the commands (see stampPipelineErr).
type pipeliner interface {
	Exec(ctx context.Context, cmds []redis.Cmder) error
}

// goRedisPipeliner is a pipeliner over one go-redis node client.
type goRedisPipeliner struct{ c *redis.Client }

func (p goRedisPipeliner) Exec(ctx context.Context, cmds []redis.Cmder) error {
	pipe := p.c.Pipeline()
	pipe.BatchProcess(ctx, cmds...) // one copy of the slice, not one append a command
	_, err := pipe.Exec(ctx)
	return err
}

// execStamped sends cmds through p, the pipeline-level failure stamped on
// every command (see stampPipelineErr): how every sub-pipeline is sent.
func execStamped(ctx context.Context, p pipeliner, cmds []redis.Cmder) error {
	err := p.Exec(ctx, cmds)
	stampPipelineErr(err, cmds)
	return err
}

// stampPipelineErr makes sure a pipeline-level failure is on every command.
// go-redis v9 leaves a Redis error raised while setting up the connection
// (AUTH or HELLO refused: WRONGPASS, NOAUTH) off the commands, which then
// read as answered with a nil value: a command that never ran would count
// as done. A pipeline that ran reports its first command error, so an error
// while no command carries one can only be such a set-up failure.
func stampPipelineErr(err error, cmds []redis.Cmder) {
	if err == nil {
		return
	}
	for _, c := range cmds {
		if c.Err() != nil {
			return
		}
	}
	for _, c := range cmds {
		c.SetErr(err)
	}
}
