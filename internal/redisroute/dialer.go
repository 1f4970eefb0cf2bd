package redisroute

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"time"
)

// Dialer returns the function that connects to a Redis node: go-redis's
// default (a TCP dial, then TLS if configured), from source when it is
// valid. nil means go-redis's own. A source address lets a host with
// several addresses present one to Redis ACLs and firewalls, and lets
// `apollo verify` cut one instance off from Redis (its firewall rules
// match the instance's address). Its context bounds it: go-redis's pool
// gives every dial one that ends at the client's DialTimeout.
func Dialer(source netip.Addr, tlsConfig *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	if !source.IsValid() {
		return nil
	}
	d := &net.Dialer{
		LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(source, 0)), // keeps an IPv6 zone
		// go-redis's default keep-alive (options.go, defaultKeepAliveConfig).
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3},
	}
	if tlsConfig == nil {
		return d.DialContext
	}
	return (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext
}
