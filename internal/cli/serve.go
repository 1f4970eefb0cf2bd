package cli

import (
	"context"
	"fmt"

	"github.com/apollo-platform/apollo/internal/app"
)

const serveSynopsis = `Serve the driver-availability API against a Redis Cluster.

  apollo serve --redis-addrs 10.0.0.1:7000,10.0.0.2:7000 [--read-policy replica-preferred]

The public API listens on --listen; /metrics, /debug/pprof/, /livez and /readyz
on --admin-listen (loopback by default). SIGINT/SIGTERM: /readyz turns 503,
in-flight requests finish, then Redis connections close.`

func runServe(ctx context.Context, e env, args []string) error {
	cfg := app.DefaultConfig()
	fs := newFlagSet(e, "serve", serveSynopsis)
	cfg.RegisterFlags(fs)
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return usageError{err}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	log := app.NewLogger(cfg, e.stderr)
	log.Info("starting apollo", "version", versionString(), "config", cfg.Redacted())
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := a.Listen(); err != nil {
		a.Close()
		return err
	}
	fmt.Fprintf(e.stdout, "apollo serving API on http://%s, admin on http://%s\n", a.APIAddr(), a.AdminAddr())
	return a.Serve(ctx)
}
