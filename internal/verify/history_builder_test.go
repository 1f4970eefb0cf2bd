package verify

import (
	"net/http"
	"time"
)

// These helpers write synthetic histories the way a run records them, so
// that the tables of the model and audit tests read as specifications:
// an op is what a client did between two times (seconds into the run)
// and what it was answered.

var runStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func sec(s float64) int64 { return int64(s * 1e9) }

// unixMs is s seconds into the run as a unix-ms time, as answers carry.
func unixMs(s float64) int64 { return runStart.Add(time.Duration(sec(s))).UnixMilli() }

// history numbers ops in order (their IDs) and starts the run at runStart.
func history(ops ...Op) History {
	h := History{Start: runStart, Slack: 2 * time.Second}
	for i, op := range ops {
		op.ID = i
		h.Ops = append(h.Ops, op)
	}
	return h
}

// withFinal is h with its final state read at s seconds into the run.
func withFinal(h History, s float64, bookings map[string]State, drivers map[string]State) History {
	h.Final = Final{At: runStart.Add(time.Duration(sec(s))), Bookings: bookings, Drivers: drivers}
	return h
}

// bk is a booking as an answer shows it.
func bk(status, driverID string, version int64) State {
	return State{Status: status, DriverID: driverID, Version: version}
}

// drv is a driver as an answer shows it.
func drv(status, bookingID string, accepted bool, version int64) State {
	return State{Status: status, BookingID: bookingID, Accepted: accepted, Version: version}
}

// until is s with its reservation ending at e seconds into the run.
func until(s State, e float64) State { s.ReservedUntil = unixMs(e); return s }

// due is s with its deadline at e seconds into the run.
func due(s State, e float64) State { s.Deadline = unixMs(e); return s }

func op(kind Kind, from, to float64) Op {
	return Op{Kind: kind, Invoke: sec(from), Return: sec(to), Instance: "http://apollo-0"}
}

func answered(o Op, status int, s State) Op {
	o.Outcome, o.Status, o.Seen = OK, status, s
	return o
}

func refused(o Op, status int, code string) Op {
	o.Outcome, o.Status, o.Code = Failed, status, code
	return o
}

func unknown(o Op) Op { o.Outcome = Unknown; return o }

func onBooking(o Op, id string) Op { o.BookingID = id; return o }

// Booking operations.

func create(id string, from, to float64, s State) Op {
	return answered(onBooking(op(CreateBooking, from, to), id), http.StatusCreated, s)
}
func createUnknown(id string, from, to float64) Op {
	o := onBooking(op(CreateBooking, from, to), id)
	o.Status, o.Code = http.StatusServiceUnavailable, "unavailable"
	return unknown(o)
}
func createRefused(id string, from, to float64) Op {
	return refused(onBooking(op(CreateBooking, from, to), id), http.StatusTooManyRequests, "high_demand")
}
func readBooking(id string, from, to float64, s State) Op {
	return answered(onBooking(op(ReadBooking, from, to), id), http.StatusOK, s)
}
func readBookingAbsent(id string, from, to float64) Op {
	return answered(onBooking(op(ReadBooking, from, to), id), http.StatusNotFound, State{})
}
func cancel(id string, from, to float64, s State) Op {
	return answered(onBooking(op(CancelBooking, from, to), id), http.StatusOK, s)
}
func cancelRefused(id string, from, to float64) Op {
	return refused(onBooking(op(CancelBooking, from, to), id), http.StatusConflict, "illegal_transition")
}
func cancelUnknown(id string, from, to float64) Op {
	return unknown(onBooking(op(CancelBooking, from, to), id))
}

// Driver operations.

func onDriver(o Op, id string) Op { o.DriverID = id; return o }

func heartbeat(id string, from, to float64) Op {
	return answered(onDriver(op(Heartbeat, from, to), id), http.StatusOK, State{})
}
func readDriver(id string, from, to float64, s State) Op {
	return answered(onDriver(op(ReadDriver, from, to), id), http.StatusOK, s)
}
func readDriverAbsent(id string, from, to float64) Op {
	return answered(onDriver(op(ReadDriver, from, to), id), http.StatusNotFound, State{})
}
func driverEventOp(id, ev, bookingID string, from, to float64) Op {
	o := onDriver(op(DriverEvent, from, to), id)
	o.Event, o.BookingID = ev, bookingID
	return o
}
func eventOK(id, ev, bookingID string, from, to float64, s State) Op {
	return answered(driverEventOp(id, ev, bookingID, from, to), http.StatusOK, s)
}
func eventUnknown(id, ev, bookingID string, from, to float64) Op {
	return unknown(driverEventOp(id, ev, bookingID, from, to))
}
func eventRefused(id, ev, bookingID string, from, to float64) Op {
	return refused(driverEventOp(id, ev, bookingID, from, to), http.StatusConflict, "illegal_transition")
}

// by is o sent with its deadline at s seconds into the run.
func by(o Op, s float64) Op { o.Deadline = sec(s); return o }
