package redisstore

// The key schema. Every key that one script touches shares a hash tag, so
// each script runs on one slot of one shard.
//
//	apollo:drv:{<id>}         hash   one driver (fields below)
//	apollo:geo:{<cell>}       geo    drivers last seen in a coarse geohash cell
const (
	driverPrefix = "apollo:drv:{"
	geoPrefix    = "apollo:geo:{"
)

func driverKey(id string) string { return driverPrefix + id + "}" }

func geoKey(cell string) string { return geoPrefix + cell + "}" }

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
