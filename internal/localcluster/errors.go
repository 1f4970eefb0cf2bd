package localcluster

import "errors"

// ErrRedisNotInstalled means no redis-server binary could be found.
var ErrRedisNotInstalled = errors.New("redis-server not found on PATH: install it with `sudo apt-get install -y redis-server redis-tools` (Debian/Ubuntu), or set the path to the binary")

// ErrClosed is returned by operations on a cluster after Close.
var ErrClosed = errors.New("local cluster is closed")
