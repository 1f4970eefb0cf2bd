// Package httpapi is Apollo's public HTTP transport for drivers: routes,
// JSON decoding and validation, JSON encoding, and the one place where
// errors become status codes.
//
// It is transport only. Every decision about drivers is made by the store
// behind the Drivers interface (declared here, by its consumer) and by the
// driver package; this package checks that the input is well formed,
// calls the store once, and renders the answer.
//
// # Routes
//
//	PUT  /v1/drivers/{id}/location   heartbeat with the driver's position
//	POST /v1/drivers/{id}/events     a driver-initiated state transition
//	GET  /v1/drivers/{id}            one driver
//	POST /v1/drivers/batch-get       many drivers; partial failures still 200
//	GET  /v1/drivers/nearby          available drivers of a service near a point
//
// api/openapi.yaml at the module root is the contract; a test keeps it and
// Routes in step.
//
// # Errors
//
// Every error response, including the mux's own 404 and 405, is
//
//	{"error":{"code":"invalid_argument","message":"lat must be within [-90, 90]"}}
//
// with a stable code (see Code). errors.go holds the only table that maps
// errors to status codes. Bad input never yields a 5xx; errors nobody
// expected yield 500 "internal" with a generic message and are logged, so
// internals never leak to clients.
//
// # Admin
//
// NewAdmin serves /metrics, /debug/pprof/, /livez and /readyz for the
// private admin listener; they are never mounted on the public handler.
package httpapi
