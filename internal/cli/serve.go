package cli

import (
	"context"
	"fmt"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/secret"
)

const serveSynopsis = `Serve the driver-availability API against a Redis Cluster.

  apollo serve --redis-addrs 10.0.0.1:7000,10.0.0.2:7000 [--read-policy replica-preferred]

The public API listens on --listen; /metrics, /debug/pprof/, /livez, /readyz
and the Spampede rules on --admin-listen (loopback by default), and the first
three also on --health-listen if set. Changing the rules and pprof need the
token in --admin-token-file ('Authorization: Bearer <token>'); without one
they answer 401. Give the Redis password in --redis-password-file or
APOLLO_REDIS_PASSWORD rather than by flag: secrets are never logged, and are
redacted from /debug/pprof/cmdline. SIGINT/SIGTERM: /readyz turns 503,
in-flight requests finish, then Redis connections close.`

func runServe(ctx context.Context, e env, args []string) error {
	cfg := app.DefaultConfig()
	fs := newFlagSet(e, "serve", serveSynopsis)
	cfg.RegisterFlags(fs)
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	cfg.Cmdline = secret.RedactArgs(append([]string{"apollo", "serve"}, args...), app.SecretFlags()...)
	if err := cfg.Finish(); err != nil {
		return usageError{err}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	log, out := app.NewLogging(cfg, e.stderr)
	defer out.Close(stderrWait)
	log.Info("starting apollo", "version", versionString(), "config", cfg.Redacted())
	a, err := app.New(ctx, cfg, log, app.WithLogOutput(out))
	if err != nil {
		return err
	}
	if err := a.Listen(); err != nil {
		a.Close()
		return err
	}
	fmt.Fprintf(e.stdout, "apollo serving API on http://%s, admin on http://%s", a.APIAddr(), a.AdminAddr())
	if h := a.HealthAddr(); h != "" {
		fmt.Fprintf(e.stdout, ", health on http://%s", h)
	}
	fmt.Fprintln(e.stdout)
	return a.Serve(ctx)
}
