package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
	"github.com/apollo-platform/apollo/internal/httpapi"
)

func ExampleNew() {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	api, err := httpapi.New(httpapi.DefaultConfig(), httpapi.Deps{
		Drivers: newFake(), // the Redis store in production
		Rules:   driver.DefaultRules(),
		Now:     func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	send := func(method, target, body string) {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Body)
	}

	send("POST", "/v1/drivers/drv-42/events", `{"type":"go_online","services":["car"]}`)
	send("PUT", "/v1/drivers/drv-42/location", `{"lat":1.3521,"lng":103.8198}`)
	send("POST", "/v1/drivers/drv-42/events", `{"type":"start_trip"}`)
	send("POST", "/v1/drivers/drv-42/events", `{"type":"reserve","booking_id":"bk-1"}`)

	// Output:
	// 200 {"id":"drv-42","services":["car"],"status":"available","location":{"lat":0,"lng":0},"accepted":false,"version":1,"available":false}
	// 200 {"id":"drv-42","services":["car"],"status":"available","location":{"lat":1.3521,"lng":103.8198},"last_heartbeat":"2024-03-01T12:00:00Z","accepted":false,"version":1,"available":true}
	// 409 {"error":{"code":"illegal_transition","message":"cannot start_trip from available: not allowed","status":"available"}}
	// 400 {"error":{"code":"invalid_argument","message":"type \"reserve\" is made by Apollo (dispatch, or the booking pipeline) and cannot be sent through the API"}}
}
