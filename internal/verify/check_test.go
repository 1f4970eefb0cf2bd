package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fineRun is a small run with nothing wrong: a booking created, allocated
// to a driver who accepts, and the final state agreeing.
func fineRun() History {
	h := history(
		heartbeat("d1", 0, 0.1),
		eventOK("d1", "go_online", "", 0.2, 0.3, drv("available", "", false, 1)),
		create("b1", 1, 1.2, until(due(bk("allocated", "d1", 2), 11.1), 4)), // created at 1.1 s
		readDriver("d1", 1.5, 1.6, until(drv("reserved", "b1", false, 2), 4)),
		eventOK("d1", "accept", "b1", 2, 2.1, until(drv("reserved", "b1", true, 3), 4)),
		readBooking("b1", 2.5, 2.6, bk("accepted", "d1", 3)),
		createUnknown("b2", 3, 6), // never applied
		cancelUnknown("b1", 3, 6), // refused by the final status, if it ran at all
	)
	h.AllocationTimeout, h.ReservationTTL = 10*time.Second, 3*time.Second
	h.Faults = []FaultEvent{{Fault: "primary-crash", Action: "inject", At: sec(2)}, {Fault: "primary-crash", Action: "heal", At: sec(5)}}
	h = withFinal(h, 30, map[string]State{"b1": bk("accepted", "d1", 3)},
		map[string]State{"d1": until(drv("reserved", "b1", true, 3), 4)})
	h.Final.Rules = map[string]string{"apollo-0": `{"version":1}`, "apollo-1": `{"version":1}`}
	h.ACLLogRead = true
	return h
}

func TestCheckPassesAFineRun(t *testing.T) {
	r := Check(fineRun(), Options{OutDir: t.TempDir()})
	if r.Verdict != Pass || len(r.Violations) != 0 {
		t.Fatalf("verdict %s, violations %+v; want pass", r.Verdict, r.Violations)
	}
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
		if c.Verdict != Pass {
			t.Errorf("check %s: %s (%s), want pass", c.Name, c.Verdict, c.Detail)
		}
	}
	want := "booking_lifecycle driver_register created_lost driver_held_twice decline_kept_booking accepted_unasked reopened_unasked unaccepted_unasked trip_booking_moved orphan_reservation reservation_overdue booking_stuck rules_differ ghost_booking internal_error clock_off time_out_of_bounds rights_missing"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("checks %s, want %s", got, want)
	}
	c := r.Counts
	if c.Ops != 8 || c.ByOutcome[OK] != 6 || c.ByOutcome[Unknown] != 2 || c.Bookings != 2 || c.Drivers != 1 ||
		c.BookingOpsChecked != 4 || c.DriverOpsChecked != 4 || c.Faults != 1 {
		t.Errorf("counts %+v", c)
	}
}

func TestCheckWritesTheHTMLViewOfAFailingPartition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "views") // made by Check
	h := fineRun()
	h.Ops = append(h.Ops, readBookingAbsent("b1", 7, 7.1)) // a created booking lost
	h.Ops[len(h.Ops)-1].ID = len(h.Ops) - 1
	r := Check(h, Options{OutDir: dir})
	if r.Verdict != Fail {
		t.Fatalf("verdict %s, want fail", r.Verdict)
	}
	var v *Violation
	for i := range r.Violations {
		if r.Violations[i].Code == CodeBookingNotLinearizable {
			v = &r.Violations[i]
		}
	}
	if v == nil || len(r.Violations) != 1 {
		t.Fatalf("violations %+v, want one %s", r.Violations, CodeBookingNotLinearizable)
	}
	if v.File != filepath.Join(dir, "booking-b1.html") || len(v.Bookings) != 1 || v.Bookings[0] != "b1" {
		t.Errorf("violation %+v: want booking b1 and its file", v)
	}
	if !strings.Contains(v.Message, "#8 read_booking → absent") {
		t.Errorf("message %q does not name the read that cannot be placed", v.Message)
	}
	html, err := os.ReadFile(v.File)
	if err != nil || !strings.Contains(string(html), "<html") || !strings.Contains(string(html), "read_booking") {
		t.Errorf("HTML view %s: %v, %d bytes", v.File, err, len(html))
	}
	if len(r.Partitions) != 1 || r.Partitions[0].File != v.File || r.Partitions[0].Verdict != Fail {
		t.Errorf("partitions %+v, want b1 failing with its file", r.Partitions)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil || back.Verdict != Fail || back.Violations[0].File != v.File {
		t.Errorf("the report does not survive JSON: %v, %s", err, raw)
	}
}

func TestCheckWritesNoFileWithoutAnOutputDirectory(t *testing.T) {
	h := history(create("b1", 0, 1, bk("searching", "", 1)), readBookingAbsent("b1", 2, 3))
	r := Check(h, Options{})
	if r.Verdict != Fail || len(r.Violations) != 1 || r.Violations[0].File != "" {
		t.Fatalf("verdict %s, violations %+v: want one, with no file", r.Verdict, r.Violations)
	}
}

// A partition porcupine cannot decide in time is reported as undecided,
// not as linearizable: here every subset of forty unknown cancels must be
// tried before the impossible last read is given up on.
func TestCheckReportsUndecidedPartitionsHonestly(t *testing.T) {
	ops := []Op{create("b1", 0, 1, bk("searching", "", 1))}
	for i := range 40 {
		ops = append(ops, cancelUnknown("b1", 2+float64(i)/100, 2.5))
	}
	ops = append(ops, readBooking("b1", 3, 3.1, bk("searching", "d9", 7)))
	r := Check(history(ops...), Options{PartitionTimeout: 100 * time.Millisecond, Parallelism: 1})
	if r.Verdict != Undecided || r.Checks[0].Verdict != Undecided {
		t.Fatalf("verdict %s, booking check %+v; want unknown", r.Verdict, r.Checks[0])
	}
	if len(r.Partitions) != 1 || r.Partitions[0].Verdict != Undecided || len(r.Violations) != 0 {
		t.Errorf("partitions %+v, violations %+v", r.Partitions, r.Violations)
	}
	for _, c := range r.Checks[2:] {
		if c.Name != CodeDriverHeldTwice && c.Name != CodeDeclineKeptBooking && c.Name != CodeAcceptedUnasked && c.Name != CodeReopenedUnasked && c.Name != CodeUnacceptedUnasked && c.Name != CodeTripBookingMoved && c.Name != CodeInternalError && c.Name != CodeReservationOverdue && c.Verdict != Skipped {
			t.Errorf("check %s without a final state nor an allocation timeout: %s, want skipped", c.Name, c.Verdict)
		}
	}
}
