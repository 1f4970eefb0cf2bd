// Package httpapi is Apollo's public HTTP transport for drivers and
// riders: routes, JSON decoding and validation, JSON encoding, and the one
// place where errors become status codes.
//
// It is transport only. Every decision about drivers is made by the store
// behind the Drivers interface and by the driver package, and every
// decision about bookings by the pipeline behind the Bookings interface
// (both declared here, by their consumer); this package checks that the
// input is well formed, calls the store or pipeline, and renders the
// answer.
//
// # Routes
//
//	PUT  /v1/drivers/{id}/location   heartbeat with the driver's position
//	POST /v1/drivers/{id}/events     a driver-initiated state transition
//	GET  /v1/drivers/{id}            one driver
//	POST /v1/drivers/batch-get       many drivers; partial failures still 200
//	GET  /v1/drivers/nearby          available drivers of a service near a point
//	POST /v1/bookings                book a ride (201; Idempotency-Key makes retries safe)
//	GET  /v1/bookings/{id}           one booking; ?wait=5s[&version=N] long-polls for a change
//	POST /v1/bookings/{id}/cancel    cancel a booking no driver has accepted yet
//
// api/openapi.yaml at the module root is the contract; a test keeps it and
// Routes in step. Without Deps.Bookings the booking routes are still
// served, and answer 503 "bookings are not enabled".
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
// internals never leak to clients. A booking Spampede turns away is 429
// "high_demand", with the seconds to wait in both the Retry-After header
// and the error's "retry_after_s".
//
// The few answers net/http's server writes itself, before any handler
// runs (400 "bad_request" for a request that is not well-formed HTTP, 431
// "header_too_large", 501 "not_implemented" for an unsupported
// Transfer-Encoding, 505 "http_version_not_supported"), are the same JSON
// errors on a listener wrapped by WrapListener.
//
// # Admin
//
// NewAdmin serves the private admin listener; none of it is mounted on
// the public handler, and none of it is in api/openapi.yaml, which
// describes the public API only:
//
//	GET  /metrics                  Prometheus metrics
//	     /debug/pprof/             pprof
//	GET  /livez, /readyz           liveness and readiness probes (text)
//	GET  /v1/spampede/rules        the Spampede rule set in force (spampede.RuleSet JSON)
//	PUT  /v1/spampede/rules        replace the rule set of every instance: a
//	                               spampede.RuleSet, application/json, at most
//	                               1 MiB, validated by spampede.ParseRuleSet
//	                               (400 invalid_argument listing every invalid
//	                               rule); its "version" is the version
//	                               edited (required): saved as version+1 if
//	                               that is still the stored one, else 409
//	                               conflict (GET, reapply, PUT again); the
//	                               same body again succeeds; answers the rule
//	                               set then in force
//	GET  /v1/spampede/cells?top=N  the N (1 to 1000, default 20) cells tripped
//	                               now, highest count first: {"cells":[...]}
//
// The Spampede routes, and any unknown admin path or method, answer with
// the same JSON errors as the public API; without AdminDeps.Spampede the
// Spampede routes answer 503 "spampede is not enabled".
package httpapi
