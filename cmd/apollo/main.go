// Command apollo is the driver-availability and booking-admission backend
// of a ride-hailing platform, on Redis Cluster. Run `apollo help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/apollo-platform/apollo/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
