package driver

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// inStatus returns a well-formed driver in status s. A reserved driver
// holds booking "b1" until t0+1m, accepted if accepted is set.
func inStatus(s Status, accepted bool) Driver {
	d := Driver{
		ID:            "drv-1",
		Services:      []string{"car"},
		Status:        s,
		Location:      Location{Lat: 1.3, Lng: 103.8},
		LastHeartbeat: t0.Add(-time.Second),
		Version:       7,
	}
	switch s {
	case StatusReserved:
		d.BookingID, d.ReservedUntil, d.Accepted = "b1", t0.Add(time.Minute), accepted
	case StatusOnTrip:
		d.BookingID = "b1"
	}
	return d
}

// wellFormed returns a transition for ev that satisfies every precondition
// on a driver from inStatus, and the time to apply it at.
func wellFormed(ev Event) (Transition, time.Time) {
	tr := Transition{Event: ev}
	now := t0
	switch ev {
	case EventGoOnline:
		tr.Services = []string{"car", "bike"}
	case EventReserve:
		tr.BookingID, tr.Until = "b2", t0.Add(30*time.Second)
	case EventExpire:
		tr.BookingID, now = "b1", t0.Add(time.Minute)
	case EventGoOffline:
	default:
		tr.BookingID = "b1"
	}
	return tr, now
}

// TestApplyEveryPair walks every (status, event) pair: the eight legal
// moves give exactly the wanted driver, every other pair is illegal.
func TestApplyEveryPair(t *testing.T) {
	legal := map[Status]map[Event]func(d Driver) Driver{
		StatusOffline: {
			EventGoOnline: func(d Driver) Driver {
				d.Status, d.Services = StatusAvailable, []string{"car", "bike"}
				return d
			},
		},
		StatusAvailable: {
			EventGoOffline: func(d Driver) Driver {
				d.Status = StatusOffline
				return d
			},
			EventReserve: func(d Driver) Driver {
				d.Status, d.BookingID, d.ReservedUntil = StatusReserved, "b2", t0.Add(30*time.Second)
				return d
			},
		},
		StatusReserved: {
			EventAccept: func(d Driver) Driver {
				d.Accepted = true
				return d
			},
			EventDecline: func(d Driver) Driver {
				d.Status, d.BookingID, d.ReservedUntil, d.Accepted = StatusAvailable, "", time.Time{}, false
				return d
			},
			EventExpire: func(d Driver) Driver {
				d.Status, d.BookingID, d.ReservedUntil, d.Accepted = StatusAvailable, "", time.Time{}, false
				return d
			},
			EventStartTrip: func(d Driver) Driver {
				d.Status, d.ReservedUntil, d.Accepted = StatusOnTrip, time.Time{}, false
				return d
			},
			EventBackOut: func(d Driver) Driver {
				d.Accepted, d.Withdrawn = false, true
				return d
			},
		},
		StatusOnTrip: {
			EventEndTrip: func(d Driver) Driver {
				d.Status, d.BookingID = StatusAvailable, ""
				return d
			},
		},
	}

	for _, from := range Statuses() {
		for _, ev := range Events() {
			t.Run(string(from)+"/"+string(ev), func(t *testing.T) {
				accepted := ev == EventStartTrip || ev == EventBackOut
				d := inStatus(from, accepted)
				tr, now := wellFormed(ev)
				got, err := Apply(d, tr, now)

				wantFn, ok := legal[from][ev]
				if !ok {
					var te *TransitionError
					if !errors.As(err, &te) || !errors.Is(err, ErrIllegalTransition) {
						t.Fatalf("Apply = %v, want *TransitionError matching ErrIllegalTransition", err)
					}
					if te.From != from || te.Event != ev || te.Reason != "not allowed" {
						t.Errorf("TransitionError = %+v, want From %s, Event %s, Reason %q", *te, from, ev, "not allowed")
					}
					if want := "driver: cannot " + string(ev) + " from " + string(from) + ": not allowed"; err.Error() != want {
						t.Errorf("Error() = %q, want %q", err.Error(), want)
					}
					if !reflect.DeepEqual(got, d) {
						t.Errorf("Apply returned %+v on error, want the input %+v", got, d)
					}
					return
				}
				if err != nil {
					t.Fatalf("Apply = %v, want success", err)
				}
				want := wantFn(inStatus(from, accepted))
				want.Version++
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Apply =\n%+v\nwant\n%+v", got, want)
				}
			})
		}
	}
}

func TestApplyPreconditions(t *testing.T) {
	reserved := inStatus(StatusReserved, false)
	accepted := inStatus(StatusReserved, true)
	lapse := reserved.ReservedUntil
	tests := []struct {
		name    string
		d       Driver
		tr      Transition
		now     time.Time
		wantErr error
		wantMsg string
	}{
		{"go_online without services", inStatus(StatusOffline, false), Transition{Event: EventGoOnline}, t0,
			ErrInvalidServices, "services must list 1 to 16 services"},
		{"go_online with a bad service", inStatus(StatusOffline, false), Transition{Event: EventGoOnline, Services: []string{"Car"}}, t0,
			ErrInvalidServices, `services must be 1 to 32 characters from [a-z0-9_] each, got "Car"`},
		{"go_online with a repeated service", inStatus(StatusOffline, false), Transition{Event: EventGoOnline, Services: []string{"car", "car"}}, t0,
			ErrInvalidServices, `services must not repeat "car"`},
		{"reserve without booking", inStatus(StatusAvailable, false), Transition{Event: EventReserve, Until: t0.Add(time.Minute)}, t0,
			ErrInvalidArgument, "booking_id must be 1 to 64 characters"},
		{"reserve until now", inStatus(StatusAvailable, false), Transition{Event: EventReserve, BookingID: "b2", Until: t0}, t0,
			ErrInvalidArgument, "until must be after now"},
		{"accept another booking", reserved, Transition{Event: EventAccept, BookingID: "b9"}, t0,
			ErrWrongBooking, `accept for booking "b9", which the driver does not hold`},
		{"accept with no booking", reserved, Transition{Event: EventAccept}, t0,
			ErrWrongBooking, "does not hold"},
		{"accept twice", accepted, Transition{Event: EventAccept, BookingID: "b1"}, t0,
			ErrIllegalTransition, "driver: cannot accept from reserved: reservation already accepted"},
		{"accept at the lapse", reserved, Transition{Event: EventAccept, BookingID: "b1"}, lapse,
			ErrReservationExpired, "reservation lapsed at 2024-03-01T12:01:00Z"},
		{"decline another booking", reserved, Transition{Event: EventDecline, BookingID: "b0"}, t0,
			ErrWrongBooking, "does not hold"},
		{"expire another booking", reserved, Transition{Event: EventExpire, BookingID: "b0"}, lapse,
			ErrWrongBooking, "does not hold"},
		{"expire early", reserved, Transition{Event: EventExpire, BookingID: "b1"}, lapse.Add(-time.Nanosecond),
			ErrReservationNotExpired, `cannot expire booking "b1" before 2024-03-01T12:01:00Z`},
		{"expire an accepted reservation", accepted, Transition{Event: EventExpire, BookingID: "b1"}, lapse.Add(time.Minute),
			ErrIllegalTransition, "driver: cannot expire from reserved: reservation accepted"},
		{"start unaccepted", reserved, Transition{Event: EventStartTrip, BookingID: "b1"}, t0,
			ErrIllegalTransition, "reservation not accepted"},
		{"start after the lapse", accepted, Transition{Event: EventStartTrip, BookingID: "b1"}, lapse.Add(time.Second),
			ErrReservationExpired, "reservation lapsed"},
		{"start another booking", accepted, Transition{Event: EventStartTrip, BookingID: "b2"}, t0,
			ErrWrongBooking, "does not hold"},
		{"back out of an unaccepted reservation", reserved, Transition{Event: EventBackOut, BookingID: "b1"}, t0,
			ErrIllegalTransition, "driver: cannot back_out from reserved: reservation not accepted"},
		{"back out of another booking", accepted, Transition{Event: EventBackOut, BookingID: "b0"}, t0,
			ErrWrongBooking, "does not hold"},
		{"back out of an earlier reservation of the booking", accepted, Transition{Event: EventBackOut, BookingID: "b1", Until: lapse.Add(-time.Second)}, t0,
			ErrWrongReservation, "no longer holds"},
		{"accept an earlier reservation of the booking", reserved, Transition{Event: EventAccept, BookingID: "b1", Until: lapse.Add(-time.Second)}, t0,
			ErrWrongReservation, "no longer holds"},
		{"decline an earlier reservation of the booking", reserved, Transition{Event: EventDecline, BookingID: "b1", Until: lapse.Add(-time.Second)}, t0,
			ErrWrongReservation, "no longer holds"},
		{"back out of a trip", inStatus(StatusOnTrip, false), Transition{Event: EventBackOut, BookingID: "b1"}, t0,
			ErrIllegalTransition, "not allowed"},
		{"end another trip", inStatus(StatusOnTrip, false), Transition{Event: EventEndTrip, BookingID: "b2"}, t0,
			ErrWrongBooking, "does not hold"},
		{"illegal wins over wrong booking", inStatus(StatusOnTrip, false), Transition{Event: EventDecline, BookingID: "b2"}, t0,
			ErrIllegalTransition, "not allowed"},
		{"unknown event", reserved, Transition{Event: "teleport"}, t0,
			ErrInvalidArgument, `event must be one of go_online, go_offline, reserve, accept, decline, back_out, expire, start_trip, end_trip, got "teleport"`},
		{"unknown status", Driver{ID: "d"}, Transition{Event: EventGoOnline, Services: []string{"car"}}, t0,
			ErrInvalidArgument, `status must be one of offline, available, reserved, on_trip, got ""`},
	}
	sentinels := []error{ErrInvalidArgument, ErrIllegalTransition, ErrWrongBooking, ErrWrongReservation, ErrReservationNotExpired, ErrReservationExpired, ErrInvalidServices}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apply(tt.d, tt.tr, tt.now)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Apply = %+v, %v; want error matching %v", got, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), tt.wantMsg)
			}
			for _, s := range sentinels {
				if s == tt.wantErr || (tt.wantErr == ErrInvalidServices && s == ErrInvalidArgument) || (tt.wantErr == ErrWrongReservation && s == ErrWrongBooking) {
					continue
				}
				if errors.Is(err, s) {
					t.Errorf("error %v also matches %v", err, s)
				}
			}
			if !reflect.DeepEqual(got, tt.d) {
				t.Errorf("Apply returned %+v on error, want the input unchanged", got)
			}
		})
	}
}

// A late decline frees a driver, accepted or not; a late expiry frees one
// who never accepted. (An accepted reservation does not expire: see the
// table above.)
func TestApplyLateDeclineAndExpireStillFree(t *testing.T) {
	for _, tt := range []struct {
		ev       Event
		accepted bool
	}{{EventDecline, true}, {EventDecline, false}, {EventExpire, false}} {
		d := inStatus(StatusReserved, tt.accepted)
		late := d.ReservedUntil.Add(time.Hour)
		got, err := Apply(d, Transition{Event: tt.ev, BookingID: "b1"}, late)
		if err != nil || got.Status != StatusAvailable {
			t.Errorf("%s after the lapse (accepted %v) = %s, %v; want available, nil", tt.ev, tt.accepted, got.Status, err)
		}
	}
}

// A release that names the reservation it ends (Until) ends only that
// one: the same booking may have reserved the driver again since (a
// decline, then a worker's next allocation), and a release meant for the
// first reservation must not free the second while its booking names the
// driver. Reservation ends are kept to the millisecond.
func TestApplyReleaseNamingAnEarlierReservationOfTheBookingFreesNothing(t *testing.T) {
	d := inStatus(StatusReserved, false) // b1 until t0+1m
	late := d.ReservedUntil.Add(time.Hour)
	for _, tt := range []struct {
		name  string
		ev    Event
		until time.Time
		now   time.Time
		freed bool
	}{
		{"decline of the reservation held", EventDecline, d.ReservedUntil, t0, true},
		{"decline of it, to the millisecond", EventDecline, d.ReservedUntil.Add(999 * time.Microsecond), t0, true},
		{"decline naming no reservation", EventDecline, time.Time{}, t0, true},
		{"decline of an earlier reservation", EventDecline, d.ReservedUntil.Add(-15 * time.Second), t0, false},
		{"decline of one a millisecond off", EventDecline, d.ReservedUntil.Add(time.Millisecond), t0, false},
		{"expiry of the reservation held", EventExpire, d.ReservedUntil, late, true},
		{"expiry of an earlier reservation", EventExpire, d.ReservedUntil.Add(-15 * time.Second), late, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apply(d, Transition{Event: tt.ev, BookingID: "b1", Until: tt.until}, tt.now)
			switch {
			case tt.freed && (err != nil || got.Status != StatusAvailable):
				t.Errorf("= %s, %v; want available, nil", got.Status, err)
			case !tt.freed && !errors.Is(err, ErrWrongBooking):
				t.Errorf("= %s, %v; want ErrWrongBooking", got.Status, err)
			}
		})
	}
}

func TestApplyDoesNotAlias(t *testing.T) {
	services := []string{"car", "bike"}
	d := inStatus(StatusOffline, false)
	orig := d.Services
	got, err := Apply(d, Transition{Event: EventGoOnline, Services: services}, t0)
	if err != nil {
		t.Fatal(err)
	}
	services[0] = "boat"
	if got.Services[0] != "car" {
		t.Errorf("changing the transition's slice changed the driver: %v", got.Services)
	}
	if d.Services[0] != "car" || &orig[0] != &d.Services[0] {
		t.Errorf("Apply modified its input: %v", d.Services)
	}
}

// A whole trip, with Version counting each move.
func TestApplyLifecycle(t *testing.T) {
	d := Driver{ID: "drv-1", Status: StatusOffline}
	steps := []struct {
		tr   Transition
		now  time.Time
		want Status
	}{
		{Transition{Event: EventGoOnline, Services: []string{"car"}}, t0, StatusAvailable},
		{Transition{Event: EventReserve, BookingID: "b1", Until: t0.Add(time.Minute)}, t0, StatusReserved},
		{Transition{Event: EventExpire, BookingID: "b1"}, t0.Add(time.Minute), StatusAvailable},
		{Transition{Event: EventReserve, BookingID: "b2", Until: t0.Add(3 * time.Minute)}, t0.Add(2 * time.Minute), StatusReserved},
		{Transition{Event: EventAccept, BookingID: "b2"}, t0.Add(2 * time.Minute), StatusReserved},
		{Transition{Event: EventStartTrip, BookingID: "b2"}, t0.Add(2 * time.Minute), StatusOnTrip},
		{Transition{Event: EventEndTrip, BookingID: "b2"}, t0.Add(20 * time.Minute), StatusAvailable},
		{Transition{Event: EventGoOffline}, t0.Add(21 * time.Minute), StatusOffline},
	}
	for i, s := range steps {
		var err error
		d, err = Apply(d, s.tr, s.now)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.tr.Event, err)
		}
		if d.Status != s.want || d.Version != int64(i+1) {
			t.Fatalf("step %d (%s): status %s version %d, want %s version %d", i, s.tr.Event, d.Status, d.Version, s.want, i+1)
		}
	}
}

func TestApplyCorruptDriverWithoutBooking(t *testing.T) {
	d := inStatus(StatusReserved, false)
	d.BookingID = "" // as if storage lost the field
	if _, err := Apply(d, Transition{Event: EventAccept}, t0); !errors.Is(err, ErrWrongBooking) {
		t.Errorf("accept with no booking on either side = %v, want ErrWrongBooking", err)
	}
}

// A driver whose accepted reservation lapsed before the trip started can
// still back out: it is its only way out (a trip can no longer start).
// The back-out withdraws the accept and keeps the reservation, so that the
// booking can let go before the driver is freed.
func TestABackOutWithdrawsTheAcceptEvenAfterTheLapse(t *testing.T) {
	d := inStatus(StatusReserved, true)
	got, err := Apply(d, Transition{Event: EventBackOut, BookingID: d.BookingID, Until: d.ReservedUntil}, d.ReservedUntil.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusReserved || got.Accepted || !got.Withdrawn || got.BookingID != d.BookingID || !got.ReservedUntil.Equal(d.ReservedUntil) || got.Version != d.Version+1 {
		t.Errorf("after the back-out: %+v, want reserved for %s, withdrawn, same end, one version on", got, d.BookingID)
	}
	// One way: neither an accept sent again nor a trip can follow.
	for _, ev := range []Event{EventStartTrip, EventAccept} {
		if _, err := Apply(got, Transition{Event: ev, BookingID: d.BookingID}, t0); !errors.Is(err, ErrIllegalTransition) {
			t.Errorf("%s after the back-out = %v, want refused", ev, err)
		}
	}
	// Its release clears it, and so does the next reservation.
	free, err := Apply(got, Transition{Event: EventDecline, BookingID: d.BookingID, Until: d.ReservedUntil}, t0)
	if err != nil || free.Withdrawn || free.Status != StatusAvailable {
		t.Fatalf("the decline after the back-out: %+v, %v", free, err)
	}
}
