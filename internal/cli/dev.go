package cli

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/sim"
)

const devSynopsis = `Run Apollo locally: a throwaway 3 × 2 Redis Cluster, the service against it,
and a simulated fleet of drivers in Singapore moving and heartbeating.
Prints the API and admin URLs with example requests; Ctrl-C stops everything.`

// devState is what --state-file receives, for scripts and tests.
type devState struct {
	APIURL   string                  `json:"api_url"`
	AdminURL string                  `json:"admin_url"`
	Nodes    []localcluster.NodeInfo `json:"nodes"`
	Drivers  int                     `json:"drivers"`
}

func runDev(ctx context.Context, e env, args []string) error {
	ccfg := localcluster.DefaultConfig()
	ccfg.ExtraArgs = []string{"cluster-allow-reads-when-down yes"}
	acfg := app.DefaultConfig()
	acfg.Listen, acfg.AdminListen, acfg.DrainDelay = "127.0.0.1:8080", "127.0.0.1:9090", 0
	acfg.LogFormat = "text"
	fcfg := sim.DefaultFleetConfig()
	fs := newFlagSet(e, "dev", devSynopsis)
	fs.IntVar(&ccfg.Primaries, "primaries", ccfg.Primaries, "Redis primaries")
	fs.IntVar(&ccfg.Replicas, "replicas", ccfg.Replicas, "replicas per primary")
	fs.StringVar(&acfg.Listen, "listen", acfg.Listen, "API address (use 127.0.0.1:0 for any free port)")
	fs.StringVar(&acfg.AdminListen, "admin-listen", acfg.AdminListen, "admin address")
	fs.Var(&acfg.Redis.Policy, "read-policy", "read policy of the service")
	fs.IntVar(&fcfg.Size, "drivers", fcfg.Size, "simulated drivers")
	fs.Uint64Var(&fcfg.Seed, "seed", fcfg.Seed, "random seed of the fleet")
	stateFile := fs.String("state-file", "", "write API URL, admin URL and cluster nodes here as JSON")
	fs.TextVar(&acfg.LogLevel, "log-level", acfg.LogLevel, "debug, info, warn or error")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if err := ccfg.Validate(); err != nil {
		return usageError{err}
	}
	if err := fcfg.Validate(); err != nil {
		return usageError{err}
	}
	log := app.NewLogger(acfg, e.stderr)

	fmt.Fprintf(e.stdout, "starting a local Redis Cluster (%d × %d)...\n", ccfg.Primaries, ccfg.Replicas)
	cluster, err := localcluster.Start(ctx, ccfg)
	if err != nil {
		return err
	}
	defer func() {
		cluster.Close()
		fmt.Fprintln(e.stdout, "local cluster stopped")
	}()
	acfg.Redis.Addrs = cluster.Addrs()
	a, err := app.New(ctx, acfg, log)
	if err != nil {
		return err
	}
	if err := a.Listen(); err != nil {
		a.Close()
		return err
	}
	fleet, err := sim.NewFleet(fcfg, a.Drivers())
	if err != nil {
		a.Close()
		return err
	}
	fmt.Fprintf(e.stdout, "seeding %d drivers...\n", fcfg.Size)
	if err := fleet.Seed(ctx, time.Now, func(n int) { fmt.Fprintf(e.stdout, "  %d/%d\n", n, fcfg.Size) }); err != nil {
		a.Close()
		return err
	}
	var heartbeatErrs atomic.Int64
	fctx, stopFleet := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fleet.Run(fctx, time.Now, func(error) { heartbeatErrs.Add(1) })
	}()
	defer func() {
		stopFleet()
		wg.Wait()
	}()

	st := devState{APIURL: "http://" + a.APIAddr(), AdminURL: "http://" + a.AdminAddr(), Drivers: fcfg.Size}
	st.Nodes, _ = cluster.Info(ctx)
	if *stateFile != "" {
		if err := writeJSONFile(*stateFile, st); err != nil {
			a.Close()
			return err
		}
		defer os.Remove(*stateFile)
	}
	printDevBanner(e, st)
	return a.Serve(ctx)
}

func printDevBanner(e env, st devState) {
	seed, more := "?", 0
	if len(st.Nodes) > 0 {
		seed, more = st.Nodes[0].Addr, len(st.Nodes)-1
	}
	fmt.Fprintf(e.stdout, `
Apollo is running.
  API:    %[1]s
  admin:  %[2]s/metrics  %[2]s/readyz  %[2]s/debug/pprof/
  Redis:  %[3]s (and %[4]d more nodes)

Try:
  curl -s %[1]s/v1/drivers/drv-000001
  curl -s -X POST %[1]s/v1/drivers/batch-get -H 'Content-Type: application/json' -d '{"ids":["drv-000001","drv-000002","drv-000003"]}'
  curl -s '%[1]s/v1/drivers/nearby?lat=1.3521&lng=103.8198&radius_m=3000&service=car&limit=5'
  curl -s -X PUT %[1]s/v1/drivers/drv-000001/location -H 'Content-Type: application/json' -d '{"lat":1.3,"lng":103.8}'
  curl -s -X POST %[1]s/v1/drivers/drv-000001/events -H 'Content-Type: application/json' -d '{"type":"go_offline"}'
  curl -s -X POST %[1]s/v1/bookings -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-1' \
       -d '{"rider_id":"rider-1","service":"car","pickup":{"lat":1.3521,"lng":103.8198},"dropoff":{"lat":1.29,"lng":103.85}}'
  curl -s '%[2]s/v1/spampede/cells?top=20'

Ctrl-C stops the service, the fleet and the cluster.
`, st.APIURL, st.AdminURL, seed, more)
}
