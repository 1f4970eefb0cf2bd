package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/localcluster"
	"github.com/apollo-platform/apollo/internal/localcluster/clustertest"
)

// A write that fails says so when nothing it asked for was done: every
// Redis write it sent came back refused. A client (and apollo verify) can
// then count it as failed, not as "may have happened until its
// deadline". A full primary, or one that cannot persist, refuses before
// anything runs; a hung one
// leaves the outcome unknown, and the answer must not claim otherwise.
func TestAFailedWriteSaysWhenNothingWasDone(t *testing.T) {
	c := clustertest.Start(t, func(cfg *localcluster.Config) { cfg.Primaries, cfg.Replicas = 1, 1 })
	_, api, _ := startApp(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	heartbeat := func(deadline time.Duration) (int, errorAnswer) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, api+"/v1/drivers/drv-1/location", strings.NewReader(`{"lat":1.30,"lng":103.80}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Apollo-Deadline", strconv.FormatInt(time.Now().Add(deadline).UnixMilli(), 10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a errorAnswer
		_ = json.NewDecoder(resp.Body).Decode(&a)
		return resp.StatusCode, a
	}
	if code, _ := heartbeat(3 * time.Second); code != 200 {
		t.Fatalf("heartbeat = %d, want 200", code)
	}

	primary := c.Primary(ctx, 0)
	admin := primary.Client()
	defer admin.Close()
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	code, a := heartbeat(3 * time.Second)
	admin.ConfigSet(ctx, "maxmemory", "0")
	if code != 503 || !a.Error.NotApplied {
		t.Errorf("heartbeat to a full primary = %d %+v, want 503 saying not_applied", code, a.Error)
	}

	// A primary that cannot persist refuses before anything runs too, and
	// it is the cluster's state, not a bug: a 503 that says why.
	if err := primary.FailPersistence(ctx); err != nil {
		t.Fatal(err)
	}
	code, a = heartbeat(3 * time.Second)
	if err := primary.RestorePersistence(ctx); err != nil {
		t.Fatal(err)
	}
	if code != 503 || !a.Error.NotApplied || !strings.Contains(a.Error.Message, "disk") {
		t.Errorf("heartbeat to a primary that cannot persist = %d %+v, want 503 saying not_applied and why", code, a.Error)
	}

	// A primary busy with a script answers BUSY and runs nothing.
	if err := primary.Busy(ctx); err != nil {
		t.Fatal(err)
	}
	code, a = heartbeat(time.Second)
	if err := primary.Unbusy(ctx); err != nil {
		t.Fatal(err)
	}
	if code != 503 || !a.Error.NotApplied {
		t.Errorf("heartbeat to a busy primary = %d %+v, want 503 saying not_applied", code, a.Error)
	}

	if err := primary.Pause(); err != nil {
		t.Fatal(err)
	}
	code, a = heartbeat(300 * time.Millisecond)
	if err := primary.Resume(); err != nil {
		t.Fatal(err)
	}
	if code != 503 || a.Error.NotApplied {
		t.Errorf("heartbeat to a hung primary = %d %+v, want 503 without not_applied: it may land when the primary wakes (before its deadline)", code, a.Error)
	}
}

type errorAnswer struct {
	Error struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		NotApplied bool   `json:"not_applied"`
	} `json:"error"`
}
