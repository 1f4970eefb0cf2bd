package redisroute_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// router goroutine and in-flight request must end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-redis re-dials a refused address once in the background after
		// ~1 s and then exits on its own; it is not ours to stop.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	)
}
