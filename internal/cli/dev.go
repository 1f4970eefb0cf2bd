package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/sim"
)

const devSynopsis = `Run Apollo locally: a throwaway 3 × 2 Redis Cluster, the service against it,
a simulated fleet of drivers in Singapore moving and heartbeating, and a rider
app's batch reads of them through the API. The admin listener serves the live
console, with a fault panel: kill or hang a Redis node, start a rainstorm.
Prints the API and admin URLs with example requests; Ctrl-C stops everything.

With --instances N, N instances share the cluster (and the booking work, through
partition leases); the first listens on --listen and --admin-listen, the others
on the next ports (any free port if the given one is 0), and the simulated
drivers spread their calls over them in turn, as through a load balancer.`

// devState is what --state-file receives, for scripts and tests.
type devState struct {
	APIURL   string `json:"api_url"`
	AdminURL string `json:"admin_url"`
	// ConsoleURL is the first instance's live console.
	ConsoleURL string                  `json:"console_url"`
	APIURLs    []string                `json:"api_urls"`   // every instance's, the first's first
	AdminURLs  []string                `json:"admin_urls"` // likewise
	Nodes      []localcluster.NodeInfo `json:"nodes"`
	Drivers    int                     `json:"drivers"`
	// AdminTokenFile holds the admin token of this run (owner-only).
	AdminTokenFile string `json:"admin_token_file"`
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
	instances := fs.Int("instances", 1, "Apollo instances sharing the cluster (1 to 8)")
	fs.StringVar(&acfg.Listen, "listen", acfg.Listen, "API address (use 127.0.0.1:0 for any free port)")
	fs.StringVar(&acfg.AdminListen, "admin-listen", acfg.AdminListen, "admin address")
	fs.Var(&acfg.Redis.Policy, "read-policy", "read policy of the service")
	fs.IntVar(&fcfg.Size, "drivers", fcfg.Size, "simulated drivers")
	fs.Uint64Var(&fcfg.Seed, "seed", fcfg.Seed, "random seed of the fleet")
	readsPerSecond := fs.Float64("reads-per-second", 20, "batch reads of 20 drivers a second through the API, as a rider app makes (0: none)")
	stateFile := fs.String("state-file", "", "write API URL, admin URL and cluster nodes here as JSON")
	fs.TextVar(&acfg.LogLevel, "log-level", acfg.LogLevel, "debug, info, warn or error")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if err := ccfg.Validate(); err != nil {
		return usageError{err}
	}
	if *instances < 1 || *instances > 8 {
		return usageError{fmt.Errorf("--instances must be 1 to 8, got %d", *instances)}
	}
	if err := fcfg.Validate(); err != nil {
		return usageError{err}
	}
	if *readsPerSecond < 0 || *readsPerSecond > 1000 {
		return usageError{fmt.Errorf("--reads-per-second must be 0 to 1000, got %g", *readsPerSecond)}
	}
	log, logOut := app.NewLogging(acfg, e.stderr)
	defer logOut.Close(stderrWait)

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
	tokenFile := filepath.Join(cluster.Dir(), "admin-token")
	if acfg.AdminToken, err = newAdminToken(tokenFile); err != nil {
		return err
	}
	faults := &devFaults{cluster: cluster}
	apps, err := startDevInstances(ctx, acfg, *instances, log, app.WithFaults(faults), app.WithLogOutput(logOut))
	if err != nil {
		return err
	}
	closeAll := func() {
		faults.stop()
		for _, a := range apps {
			a.Close()
		}
	}
	if err := faults.start(apps); err != nil {
		closeAll()
		return err
	}
	// The rain stops with Ctrl-C, before the instances drain, not after.
	defer context.AfterFunc(ctx, faults.stop)()
	defer faults.stop()
	fleet, err := sim.NewFleet(fcfg, &roundRobin{apps: apps})
	if err != nil {
		closeAll()
		return err
	}
	fmt.Fprintf(e.stdout, "seeding %d drivers...\n", fcfg.Size)
	if err := fleet.Seed(ctx, time.Now, func(n int) { fmt.Fprintf(e.stdout, "  %d/%d\n", n, fcfg.Size) }); err != nil {
		closeAll()
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
	if *readsPerSecond > 0 {
		var apis []string
		for _, a := range apps {
			apis = append(apis, "http://"+a.APIAddr())
		}
		reads := newDevReads(apis, fcfg.Size)
		reads.every = time.Duration(float64(time.Second) / *readsPerSecond)
		faults.reads.Store(reads)
		wg.Add(1)
		go func() {
			defer wg.Done()
			reads.run(fctx)
		}()
	}
	defer func() {
		stopFleet()
		wg.Wait()
	}()

	st := devState{Drivers: fcfg.Size, AdminTokenFile: tokenFile}
	for _, a := range apps {
		st.APIURLs, st.AdminURLs = append(st.APIURLs, "http://"+a.APIAddr()), append(st.AdminURLs, "http://"+a.AdminAddr())
	}
	st.APIURL, st.AdminURL = st.APIURLs[0], st.AdminURLs[0]
	st.ConsoleURL = st.AdminURL + "/console/"
	st.Nodes, _ = cluster.Info(ctx)
	if *stateFile != "" {
		if err := writeJSONFile(*stateFile, st); err != nil {
			closeAll()
			return err
		}
		defer os.Remove(*stateFile)
	}
	printDevBanner(e, st)
	return serveAll(ctx, apps)
}

// newAdminToken makes a random admin token for this run and writes it,
// readable by its owner only, to path (in the cluster's directory, removed
// with it): the banner names the file, never the token.
func newAdminToken(path string) (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b[:])
	return token, os.WriteFile(path, []byte(token+"\n"), 0o600)
}

// startDevInstances builds and binds n instances: the first on cfg's
// addresses, each next one on the next ports (or any free port for 0).
func startDevInstances(ctx context.Context, cfg app.Config, n int, log *slog.Logger, opts ...app.Option) ([]*app.App, error) {
	var apps []*app.App
	for i := range n {
		c := cfg
		var err error
		if c.Listen, err = nextPort(cfg.Listen, i); err == nil {
			c.AdminListen, err = nextPort(cfg.AdminListen, i)
		}
		if err != nil {
			return nil, usageError{err}
		}
		if n > 1 {
			c.InstanceID = fmt.Sprintf("dev-%d", i+1)
		}
		a, err := app.New(ctx, c, log.With("instance", i+1), opts...)
		if err == nil {
			if err = a.Listen(); err != nil {
				a.Close()
			}
		}
		if err != nil {
			for _, x := range apps {
				x.Close()
			}
			return nil, err
		}
		apps = append(apps, a)
	}
	return apps, nil
}

// nextPort is addr with its port moved up by i (0 stays 0: any free port).
func nextPort(addr string, i int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("address %q: the port must be a number", addr)
	}
	if p == 0 {
		return addr, nil
	}
	return net.JoinHostPort(host, strconv.Itoa(p+i)), nil
}

// serveAll serves every instance until ctx ends and joins their errors.
func serveAll(ctx context.Context, apps []*app.App) error {
	errs := make([]error, len(apps))
	var wg sync.WaitGroup
	for i, a := range apps {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = a.Serve(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// roundRobin spreads the simulated drivers' and the rainstorm's calls over
// the instances in turn, as a load balancer would.
type roundRobin struct {
	apps []*app.App
	next atomic.Uint64
}

func (r *roundRobin) pick() *app.App {
	return r.apps[int(r.next.Add(1))%len(r.apps)]
}

func (r *roundRobin) Heartbeat(ctx context.Context, id string, loc driver.Location, now time.Time) (driver.Driver, error) {
	return r.pick().DriverAPI().Heartbeat(ctx, id, loc, now)
}

func (r *roundRobin) Apply(ctx context.Context, id string, tr driver.Transition, now time.Time) (driver.Driver, error) {
	return r.pick().DriverAPI().Apply(ctx, id, tr, now)
}

func (r *roundRobin) Create(ctx context.Context, req booking.Request) (booking.Booking, error) {
	return r.pick().Bookings().Create(ctx, req)
}

func printDevBanner(e env, st devState) {
	seed, more := "?", 0
	if len(st.Nodes) > 0 {
		seed, more = st.Nodes[0].Addr, len(st.Nodes)-1
	}
	others := ""
	for i := 1; i < len(st.APIURLs); i++ {
		others += fmt.Sprintf("  instance %d: API %s, admin %s\n", i+1, st.APIURLs[i], st.AdminURLs[i])
	}
	fmt.Fprintf(e.stdout, `
Apollo is running.
  console: %[2]s/console/
           its fault panel (kill or hang a Redis node, start a rainstorm) asks for the
           admin token; or open it with the token in the URL's fragment (never sent):
           xdg-open "%[2]s/console/#token=$(cat %[6]s)"
  API:    %[1]s
  admin:  %[2]s/metrics  %[2]s/readyz  %[2]s/v1/spampede/rules
          pprof and rule changes need the token in %[6]s:
          curl -s -H "Authorization: Bearer $(cat %[6]s)" %[2]s/debug/pprof/
%[5]s  Redis:  %[3]s (and %[4]d more nodes)

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
`, st.APIURL, st.AdminURL, seed, more, others, st.AdminTokenFile)
}
