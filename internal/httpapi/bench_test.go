package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

// BenchmarkBatchGetHandler is the batch read of 20 drivers through the
// API's whole handler chain (request id, metrics, access log, panic
// recovery, decoding, validation, encoding) over an in-memory store, with
// no network: the HTTP layer's own CPU and allocations per call, which
// BenchmarkBatchGet20 in internal/app shows beside the store's.
func BenchmarkBatchGetHandler(b *testing.B) {
	var ds []driver.Driver
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%04d", i)
		ds = append(ds, driver.Driver{ID: ids[i], Services: []string{"car"}, Status: driver.StatusAvailable,
			Location: driver.Location{Lat: 1.3 + float64(i)/1000, Lng: 103.8}, LastHeartbeat: testNow.Add(-time.Duration(i) * time.Second), Version: int64(i)})
	}
	h := newQuietHarness(b, newFake(ds...), nil)
	body := `{"ids":["` + strings.Join(ids, `","`) + `"]}`
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/drivers/batch-get", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
