package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/apollo-platform/apollo/internal/booking"
	"github.com/apollo-platform/apollo/internal/console"
)

// Option changes how New wires the service. apollo serve and dev give it
// their log output (WithLogOutput); apollo spike uses the others to
// observe admissions and to give allocation the cost of a real dispatch
// engine.
type Option func(*options)

type options struct {
	admitter  func(booking.Admitter) booking.Admitter
	allocator func(booking.Allocator) booking.Allocator
	faults    console.Faults
	logOutput prometheus.Collector // what the process's log output dropped
}

// WrapAdmitter puts w around the Spampede filter as the booking pipeline
// sees it.
func WrapAdmitter(w func(booking.Admitter) booking.Admitter) Option {
	return func(o *options) { o.admitter = w }
}

// WrapAllocator puts w around the driver allocator as the booking
// pipeline sees it.
func WrapAllocator(w func(booking.Allocator) booking.Allocator) Option {
	return func(o *options) { o.allocator = w }
}

// WithFaults gives the console a fault panel (apollo dev only).
func WithFaults(f console.Faults) Option {
	return func(o *options) { o.faults = f }
}

// WithLogOutput exports what the process's log output dropped (a
// *logsink.Sink, from NewLogging) with the instance's metrics.
func WithLogOutput(c prometheus.Collector) Option {
	return func(o *options) { o.logOutput = c }
}

func collect(opts []Option) options {
	o := options{
		admitter:  func(a booking.Admitter) booking.Admitter { return a },
		allocator: func(a booking.Allocator) booking.Allocator { return a },
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
