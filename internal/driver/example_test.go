package driver_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/apollo-platform/apollo/internal/driver"
)

func Example() {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	rules := driver.DefaultRules()

	d := driver.Driver{ID: "drv-42", Status: driver.StatusOffline}
	d, _ = driver.Apply(d, driver.Transition{Event: driver.EventGoOnline, Services: []string{"car"}}, now)
	d, _ = driver.Heartbeat(d, driver.Location{Lat: 1.3521, Lng: 103.8198}, now)
	fmt.Println(d.Status, rules.Available(d, now, "car"))

	// Dispatch reserves the driver for one booking; a second booking loses.
	d, _ = driver.Apply(d, driver.Transition{Event: driver.EventReserve, BookingID: "bk-1", Until: now.Add(5 * time.Minute)}, now)
	_, err := driver.Apply(d, driver.Transition{Event: driver.EventReserve, BookingID: "bk-2", Until: now.Add(5 * time.Minute)}, now)
	fmt.Println(d.Status, errors.Is(err, driver.ErrIllegalTransition))
	fmt.Println(err)

	// A late expiry for an old booking cannot free the driver.
	_, err = driver.Apply(d, driver.Transition{Event: driver.EventExpire, BookingID: "bk-0"}, now.Add(time.Hour))
	fmt.Println(errors.Is(err, driver.ErrWrongBooking))

	for _, ev := range []driver.Event{driver.EventAccept, driver.EventStartTrip, driver.EventEndTrip} {
		d, err = driver.Apply(d, driver.Transition{Event: ev, BookingID: "bk-1"}, now.Add(time.Minute))
		fmt.Println(ev, "->", d.Status, err)
	}
	fmt.Println("version", d.Version)

	// Output:
	// available true
	// reserved true
	// driver: cannot reserve from reserved: not allowed
	// true
	// accept -> reserved <nil>
	// start_trip -> on_trip <nil>
	// end_trip -> available <nil>
	// version 5
}

func ExampleValidateLocation() {
	err := driver.ValidateLocation(91, 0)
	fmt.Println(err)

	var arg *driver.InvalidArgumentError
	if errors.As(err, &arg) {
		fmt.Println(arg.Field, errors.Is(err, driver.ErrInvalidArgument))
	}
	// Output:
	// lat must be within [-90, 90]
	// lat true
}
