# Apollo. `make demo` runs Apollo locally; `make test` runs every test, the
# integration tests included, against real Redis Clusters started by the tests.
GO      ?= go
BIN     := bin/apollo
# The toolchain: go1.26.8's standard library has vulnerabilities fixed in
# later releases (govulncheck, below). The go command fetches this one from
# the module proxy the first time.
export GOTOOLCHAIN := go1.27.3
# govulncheck, and the Go vulnerability database as a module (the public
# database cannot be reached here), indexed by its own cmd/indexdb.
VULN_VERSION   := v1.9.0
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
VULNDB         := build/vulndb
# Integration tests start several 9-process clusters; one package at a time
# keeps timing-sensitive resilience tests honest on a 2-core machine.
TESTFLAGS ?= -race -count=1 -p 1 -timeout 20m

.PHONY: all build image-bin vulncheck test demo redis iptables wrk prometheus chromium console-screenshot fmt-check vet bench bench-http drill spike spike-rounds spike-fleet capacity verify clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/apollo

# The static binary deploy/Dockerfile copies (docker build -f deploy/Dockerfile .).
image-bin:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o bin/apollo-static ./cmd/apollo

# Installs redis-server and redis-cli when missing (Debian/Ubuntu), or stops
# with a message that says what to do.
redis:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "redis-server is not installed; installing redis-server and redis-tools with apt-get..."; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; \
	} || { echo "could not install redis-server: install it yourself (apt-get install redis-server redis-tools) and re-run"; exit 1; }
	@command -v redis-server >/dev/null 2>&1 || { echo "redis-server still not on PATH"; exit 1; }

# The partition tests and verify's primary-partition fault cut their own
# clusters' loopback addresses apart with iptables (as root).
iptables:
	@command -v iptables >/dev/null 2>&1 || PATH="$$PATH:/usr/sbin:/sbin" command -v iptables >/dev/null 2>&1 || { \
	  echo "iptables is not installed; installing it with apt-get..."; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null; \
	} || { echo "could not install iptables: install it yourself (apt-get install iptables) and re-run"; exit 1; }

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# BenchmarkBatchGet20's HTTP row drives the API with wrk (Debian's package),
# a load generator in C that costs the shared cores far less per call than
# Go's client (the row with Go's client runs too).
wrk:
	@command -v wrk >/dev/null 2>&1 || { \
	  echo "wrk is not installed; installing Debian's wrk package with apt-get..."; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; \
	} || { echo "could not install wrk: install it yourself (apt-get install wrk) and re-run"; exit 1; }

# The monitoring mixin's tests need promtool and prometheus (Debian's package).
prometheus:
	@command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || { \
	  echo "prometheus is not installed; installing Debian's prometheus package with apt-get..."; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	} || { echo "could not install prometheus: install it yourself (apt-get install prometheus) and re-run"; exit 1; }

# The console's browser test drives Debian's Chromium with chromedp.
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || { \
	  echo "chromium is not installed; installing Debian's chromium package with apt-get..."; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	} || { echo "could not install chromium: install it yourself (apt-get install chromium) and re-run"; exit 1; }

# The README's picture of the console under a replica hang.
console-screenshot: redis chromium
	$(GO) test -count=1 -run TestTheConsoleShowsTheClusterLiveInABrowser ./internal/cli -console-screenshot=$(CURDIR)/docs/console.png

# govulncheck against an offline copy of the vulnerability database; it
# fails on any vulnerability that Apollo's code can reach.
vulncheck:
	@if [ ! -f $(VULNDB)/index/db.json ]; then \
	  echo "indexing the Go vulnerability database $(VULNDB_VERSION) into $(VULNDB)..."; \
	  dir=$$($(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  [ -d "$$dir/data/osv" ] || { echo "golang.org/x/vulndb@$(VULNDB_VERSION) has no data/osv"; exit 1; }; \
	  rm -rf $(VULNDB).tmp && $(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) -vulns "$$dir/data/osv" -out $(VULNDB).tmp && mv $(VULNDB).tmp $(VULNDB); \
	fi
	$(GO) run golang.org/x/vuln/cmd/govulncheck@$(VULN_VERSION) -db file://$(CURDIR)/$(VULNDB) ./...

test: redis iptables prometheus chromium fmt-check vet vulncheck
	$(GO) test $(TESTFLAGS) ./...

# Throughput, Apollo next to go-redis v9 in the same run (figures in the README).
bench: redis wrk
	$(GO) test -run '^$$' -bench . -benchtime 5s ./internal/redisroute/ ./internal/app/

# The batch read through the store and through HTTP, the load generator on
# CPUs of its own: this machine's last CPU for it, the others for Apollo and
# its cluster (needs two CPUs or more; figures in the README). Three rounds,
# each on a fresh cluster, so that each round's ratio is taken in one sitting;
# http-floor-busy is net/http's own cost a request at a few thousand a second.
bench-http: redis wrk
	@n=$$(nproc --all); [ "$$n" -ge 2 ] || { echo "bench-http needs 2 CPUs or more, this machine has $$n"; exit 1; }; \
	$(GO) test -c -o bin/app.test ./internal/app/ && \
	for round in 1 2 3; do \
	  taskset -c 0-$$((n-2)) ./bin/app.test -test.run '^$$' -test.bench 'BatchGet20/(store|http-wrk|interleaved|http-floor-busy)$$' -test.benchtime 10s -loadgen-cpus $$((n-1)) || exit 1; \
	done

# The 2019 incident, reproduced and survived (about 4 minutes per scenario).
drill: redis build
	./$(BIN) drill --scenario replica-crash --svg docs/drill-replica-crash.svg
	./$(BIN) drill --scenario replica-hang --svg docs/drill-replica-hang.svg
	./$(BIN) drill --scenario replica-cutoff --svg docs/drill-replica-cutoff.svg
	./$(BIN) drill --scenario replica-lossy --svg docs/drill-replica-lossy.svg
	./$(BIN) drill --scenario password-rotation --svg docs/drill-password-rotation.svg

# A rainstorm over one district, with Spampede off, in shadow and on (about 10 minutes).
spike: redis build
	./$(BIN) spike --svg docs/spike-rainstorm.svg --html spike-report.html

# Baseline and on only, three rounds, riders pooled: the 5 % comparison with
# enough riders that this machine's other work does not decide it.
spike-rounds: redis build
	./$(BIN) spike --modes on --rounds 3 --repeat-baseline=false --no-filter-baseline=false --json spike-rounds.json

# The same with two instances sharing the work, then one of two instances
# crashed mid-storm (figures in the README).
spike-fleet: redis build
	./$(BIN) spike --instances 2 --modes on --rounds 3 --repeat-baseline=false --no-filter-baseline=false --json spike-fleet.json
	./$(BIN) spike --instances 2 --crash --json spike-crash.json

# What each operation and the fleet's background work ask of Redis
# (docs/capacity.md), about 5 minutes.
capacity: redis build
	./$(BIN) capacity --json capacity.json

# The guarantees checked from recorded histories under every fault, on one
# and on two instances, five minutes each, then forced failovers alone for
# two minutes (about 16 minutes in all): a forced failover is where writes
# acknowledged by one replica of two were lost before the write proof
# (README, G3).
verify: redis iptables build
	./$(BIN) verify --instances 1 --duration 5m --json verify-1.json
	./$(BIN) verify --instances 2 --duration 5m --json verify-2.json
	./$(BIN) verify --instances 2 --duration 2m --faults forced-switchover --json verify-forced.json
	./$(BIN) verify --instances 2 --duration 5m --faults random --seed $$(date +%s) --json verify-random.json

# Apollo locally: a 3 × 2 Redis Cluster, the service, and a simulated fleet.
demo: redis build
	./$(BIN) dev

clean:
	rm -rf bin
