package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/app"
	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

type bookingJSON struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	DriverID string `json:"driver_id"`
	Version  int64  `json:"version"`
	// ReservedUntil is the reservation's end while allocated.
	ReservedUntil time.Time `json:"reserved_until"`
	Error         *struct {
		Code        string `json:"code"`
		RetryAfterS int    `json:"retry_after_s"`
	} `json:"error"`
}

func postBooking(t *testing.T, api, key string, lat, lng float64) (int, bookingJSON, http.Header) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"rider_id": "rider-" + key, "service": "car",
		"pickup": map[string]float64{"lat": lat, "lng": lng}, "dropoff": map[string]float64{"lat": 1.35, "lng": 103.9}})
	req, _ := http.NewRequest("POST", api+"/v1/bookings", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b bookingJSON
	json.Unmarshal(raw, &b)
	return resp.StatusCode, b, resp.Header
}

// TestBookingsEndToEnd drives the booking pipeline over HTTP on a real
// cluster: a district with drivers keeps allocating while a district with
// none trips Spampede (429 + Retry-After); retries are idempotent; under
// concurrent bookings no driver is reserved twice.
func TestBookingsEndToEnd(t *testing.T) {
	c := clustertest.Start(t)
	rules := filepath.Join(t.TempDir(), "rules.json")
	os.WriteFile(rules, []byte(`{"version":1,"rules":[{"name":"sg","min_lat":1.15,"max_lat":1.5,"min_lng":103.55,"max_lng":104.1,
		"cell_bits":30,"bucket_seconds":60,"threshold":3,"hold_down_seconds":30}]}`), 0o600)
	cfg := app.DefaultConfig()
	cfg.Redis.Addrs = c.Addrs()[:1]
	cfg.Listen, cfg.AdminListen, cfg.DrainDelay = "127.0.0.1:0", "127.0.0.1:0", 0
	cfg.SpampedeRulesFile = rules
	cfg.Booking.AllocationTimeout, cfg.Booking.ScanEvery = 1500*time.Millisecond, 100*time.Millisecond
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	api := "http://" + a.APIAddr()

	// Ten drivers in district A; nobody in district B, 15 km away.
	now := time.Now()
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("a-%02d", i)
		a.Drivers().Heartbeat(context.Background(), id, driver.Location{Lat: 1.300 + float64(i)*0.0005, Lng: 103.800}, now)
		if _, err := a.Drivers().Apply(context.Background(), id, driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now); err != nil {
			t.Fatal(err)
		}
	}
	const bLat, bLng = 1.420, 103.900

	t.Run("an idempotent retry returns the same booking", func(t *testing.T) {
		code1, b1, _ := postBooking(t, api, "idem-1", 1.3001, 103.8001)
		code2, b2, _ := postBooking(t, api, "idem-1", 1.3001, 103.8001)
		if code1 != 201 || code2 != 201 || b1.ID == "" || b1.ID != b2.ID || b1.Status != "allocated" {
			t.Fatalf("first %d %+v, retry %d %+v", code1, b1, code2, b2)
		}
		// The driver accepts through the driver API, naming the reservation
		// it answers; the booking follows. An accept naming another
		// reservation of the booking changes nothing.
		accept := func(until time.Time) int {
			body := fmt.Sprintf(`{"type":"accept","reserved_until":%q}`, until.Format(time.RFC3339Nano))
			resp, err := http.Post(api+"/v1/drivers/"+b1.DriverID+"/events", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatalf("driver accept: %v", err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if b1.ReservedUntil.IsZero() {
			t.Fatalf("the booking %+v shows no reservation end", b1)
		}
		if code := accept(b1.ReservedUntil.Add(-time.Second)); code != http.StatusConflict {
			t.Fatalf("an accept naming an earlier reservation answered %d, want 409", code)
		}
		if got := getBooking(t, api, b1.ID); got.Status != "allocated" {
			t.Fatalf("after an accept naming another reservation: %+v, want it still allocated", got)
		}
		if code := accept(b1.ReservedUntil); code != http.StatusOK {
			t.Fatalf("driver accept answered %d", code)
		}
		if got := getBooking(t, api, b1.ID); got.Status != "accepted" || got.DriverID != b1.DriverID {
			t.Fatalf("after the driver accepted: %+v", got)
		}
	})

	t.Run("concurrent bookings never share a driver", func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		for i := 0; i < 30; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, b, _ := postBooking(t, api, fmt.Sprintf("conc-%d", i), 1.3002, 103.8002)
				if code != 201 {
					t.Errorf("booking %d: status %d", i, code)
					return
				}
				if b.DriverID == "" {
					// No driver left: the rider gives up. (Spampede has counted
					// the miss: 30 riders for 9 drivers is a spike in A.)
					resp, err := http.Post(api+"/v1/bookings/"+b.ID+"/cancel", "application/json", nil)
					if err != nil || resp.StatusCode != 200 {
						t.Errorf("cancel %s: %v %v", b.ID, err, resp)
					} else {
						resp.Body.Close()
					}
					return
				}
				{
					mu.Lock()
					if other, dup := seen[b.DriverID]; dup {
						t.Errorf("driver %s reserved by %s and %s", b.DriverID, other, b.ID)
					}
					seen[b.DriverID] = b.ID
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		// Ten drivers, one taken by the idempotency subtest. Under a 30-way
		// race a booking can run out of compare-and-set attempts on a driver
		// that stays free (the background workers would take it later), so
		// the count is a range; sharing a driver is never allowed.
		if len(seen) < 1 || len(seen) > 9 {
			t.Errorf("%d bookings got a driver, want between 1 and the 9 free drivers", len(seen))
		}
		t.Logf("%d of 30 concurrent bookings got one of the 9 free drivers at once", len(seen))
	})

	t.Run("a district without drivers trips Spampede", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			code, b, _ := postBooking(t, api, fmt.Sprintf("b-%d", i), bLat, bLng)
			if code != 201 || b.Status != "searching" {
				t.Fatalf("booking %d in B: %d %+v, want 201 searching", i, code, b)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, b, h := postBooking(t, api, fmt.Sprintf("b-late-%d", time.Now().UnixNano()), bLat, bLng)
			if code == 429 {
				if b.Error == nil || b.Error.Code != "high_demand" || b.Error.RetryAfterS < 1 || h.Get("Retry-After") == "" {
					t.Fatalf("429 without the contract: %+v %v", b.Error, h)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("B never tripped; last answer %d %+v", code, b)
			}
			time.Sleep(200 * time.Millisecond)
		}
		// A district elsewhere is unaffected: a driver on line there is allocated.
		now := time.Now()
		a.Drivers().Heartbeat(context.Background(), "c-new", driver.Location{Lat: 1.4004, Lng: 103.7004}, now)
		if _, err := a.Drivers().Apply(context.Background(), "c-new", driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now); err != nil {
			t.Fatal(err)
		}
		code, b, _ := postBooking(t, api, "c-after-spike", 1.4003, 103.7003)
		if code != 201 || b.Status != "allocated" || b.DriverID != "c-new" {
			t.Errorf("booking in C after B tripped: %d %+v, want allocated to c-new", code, b)
		}
	})

	t.Run("a driver who backs out of an accepted booking sends it searching again", func(t *testing.T) {
		now := time.Now()
		a.Drivers().Heartbeat(context.Background(), "e-1", driver.Location{Lat: 1.2000, Lng: 103.6000}, now)
		if _, err := a.Drivers().Apply(context.Background(), "e-1", driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now); err != nil {
			t.Fatal(err)
		}
		code, b, _ := postBooking(t, api, "e-back-out", 1.2001, 103.6001)
		if code != 201 || b.DriverID != "e-1" {
			t.Fatalf("booking in E: %d %+v, want allocated to e-1", code, b)
		}
		for _, ev := range []string{"accept", "decline"} {
			resp, err := http.Post(api+"/v1/drivers/e-1/events", "application/json", bytes.NewReader([]byte(`{"type":"`+ev+`"}`)))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("driver %s: %v %v", ev, err, resp)
			}
			resp.Body.Close()
		}
		// Searching again: allocated again (e-1 is the only driver near),
		// or given up at its deadline; never accepted by a driver who left.
		deadline := time.Now().Add(10 * time.Second)
		got := getBooking(t, api, b.ID)
		for got.Status != "allocated" && got.Status != "unallocated" && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			got = getBooking(t, api, b.ID)
		}
		if got.Status != "allocated" && got.Status != "unallocated" || got.Version < b.Version+3 {
			t.Fatalf("after its driver backed out the booking is %s with %q at version %d, want allocated again or unallocated, past version %d",
				got.Status, got.DriverID, got.Version, b.Version+2)
		}
		d, err := a.Drivers().Get(context.Background(), "e-1")
		if err != nil || d.Status != driver.StatusAvailable && (d.Status != driver.StatusReserved || d.BookingID != b.ID || d.Accepted) {
			t.Errorf("e-1 = %+v, %v; want available, or reserved again for %s", d, err, b.ID)
		}
	})
}

func getBooking(t *testing.T, api, id string) bookingJSON {
	t.Helper()
	resp, err := http.Get(api + "/v1/bookings/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bookingJSON
	json.NewDecoder(resp.Body).Decode(&b)
	return b
}

// TestBookingsFailClosedWhileSpampedeFailsOpen: with every Redis node
// hung, a booking cannot be stored, so the API answers 503 (never a 201 for
// a booking that was not written), while the Spampede admission in front of
// it fails open and says so in its metric.
func TestBookingsFailClosedWhileSpampedeFailsOpen(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 3, 1 })
	_, api, admin := startAppB(t, c.Addrs()[:1])
	for _, n := range c.Nodes() {
		if err := n.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, n := range c.Nodes() {
			n.Resume()
		}
	}()
	body := []byte(`{"rider_id":"r1","service":"car","pickup":{"lat":1.3,"lng":103.8},"dropoff":{"lat":1.35,"lng":103.9}}`)
	for i := 0; i < 5; i++ {
		resp, err := http.Post(api+"/v1/bookings", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Fatalf("booking %d with Redis hung: %d %s, want 503", i, resp.StatusCode, raw)
		}
	}
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte(`apollo_spampede_decisions_total{outcome="fail_open"} 5`)) {
		t.Errorf("spampede did not count 5 fail-open admissions:\n%s", grepLines(metrics, "apollo_spampede_decisions_total"))
	}
}

func grepLines(b []byte, prefix string) string {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(prefix)) {
			out = append(append(out, l...), '\n')
		}
	}
	return string(out)
}
