// Package app is Apollo's composition root: it turns one Config into a
// running service (Redis router, stores, HTTP API, admin listener), owns
// every long-lived goroutine, and shuts them down in order. It is the only
// package that imports all the others.
package app
