// Package spike is the demand-spike drill behind apollo spike: a synthetic
// city (internal/sim) drives the real booking pipeline and driver API on a
// fresh local Redis Cluster per mode, a rainstorm floods one hotspot with
// bookings no driver can take, and the report shows what that does to
// riders outside the hotspot with Spampede off, in shadow, and on.
package spike
