package redisstore

// The key schema. Every key that one script touches shares a hash tag, so
// each script runs on one slot of one shard.
//
//	apollo:drv:{<id>}         hash   one driver (fields below); expires
//	                                 Config.DriverTTL after its last heartbeat
//	apollo:geo:{<cell>}       geo    available drivers last seen in a coarse
//	                                 geohash cell
//	apollo:geohb:{<cell>}     zset   the cell's liveness: every driver whose
//	                                 last heartbeat was in the cell, scored by
//	                                 that heartbeat (unix ms), available or not
//
// The two keys of a cell share its tag: the heartbeat's index script writes
// both and sweeps members of both whose liveness is older than StaleAfter,
// and a nearby search reads both in one round trip. The liveness set holds
// busy and offline drivers too, so that a reservation (which takes a driver
// out of the geo set without a heartbeat time at hand) keeps the driver's
// liveness, and a decline can put it back with GEOADD alone.
const (
	driverPrefix   = "apollo:drv:{"
	geoPrefix      = "apollo:geo:{"
	livenessPrefix = "apollo:geohb:{"
)

func driverKey(id string) string { return driverPrefix + id + "}" }

func geoKey(cell string) string { return geoPrefix + cell + "}" }

func livenessKey(cell string) string { return livenessPrefix + cell + "}" }

// Driver hash fields. Short names: the batch read moves them for every
// driver of every call.
const (
	fID       = "id"
	fServices = "svc"
	fStatus   = "st"
	fLat      = "lat"
	fLng      = "lng"
	fHB       = "hb" // last heartbeat, unix ms
	fBooking  = "bk"
	fUntil    = "ru" // reserved until, unix ms
	fAccepted = "acc"
	fVersion  = "v"
	fCell     = "cell" // geo cell the driver is indexed in
)

// driverFields is the HMGET field list of a full driver read, in the order
// decodeDriver expects.
var driverFields = []any{fID, fServices, fStatus, fLat, fLng, fHB, fBooking, fUntil, fAccepted, fVersion, fCell}

// DriverKey is the Redis key of a driver's hash, for tools that read the
// same data without the store (the drill's go-redis baseline).
func DriverKey(id string) string { return driverKey(id) }

// DriverFields is the field list of a full driver read (HMGET).
func DriverFields() []any { return append([]any(nil), driverFields...) }

// GeoKey is the Redis key of a geo index cell, as stored in a driver's "cell" field.
func GeoKey(cell string) string { return geoKey(cell) }

// LivenessKey is the Redis key of a geo index cell's liveness set, for tools
// that remove drivers from the index without the store.
func LivenessKey(cell string) string { return livenessKey(cell) }
