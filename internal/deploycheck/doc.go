// Package deploycheck checks the deploy files in deploy/ offline, since no
// container engine or cluster runs here: the Dockerfile's shape and that
// the binary it copies is static, the compose file's services and the
// Kubernetes manifests decoded strictly into their API types, and every
// `apollo serve` command line in them parsed by serve's own flags. It has
// tests only.
package deploycheck
