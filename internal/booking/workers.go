package booking

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Start runs the background work until Stop: a scanner that claims every
// open booking that is due each ScanEvery (so bookings left by a stopped
// process are resumed or expired, never stuck) and sweeps lapsed
// reservations, and Workers goroutines that advance the bookings claimed.
func (s *Service) Start() {
	s.wg.Add(1 + s.cfg.Workers)
	go s.scan()
	for i := 0; i < s.cfg.Workers; i++ {
		go s.work()
	}
}

// Stop ends the background work and waits for it. The bookings claimed
// but not yet worked are made due now, so that whichever instance takes
// their partition over works them at once rather than after their hold.
func (s *Service) Stop() {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	now := s.now()
	for {
		select {
		case q := <-s.queue:
			if err := s.store.Schedule(ctx, q.id, now); err != nil {
				s.log.Debug("hand a claimed booking back", "booking", q.id, "err", err)
			}
		default:
			return
		}
	}
}

// Abandon ends the background work as a crash would: the bookings claimed
// stay claimed until their hold ends. For drills that crash an instance
// in process.
func (s *Service) Abandon() {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
	for {
		select {
		case <-s.queue:
		default:
			return
		}
	}
}

func (s *Service) scan() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.ScanEvery)
	defer tick.Stop()
	turn := 0
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.shares.Gained():
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ScanEvery)
		owned := s.shares.Owned()
		if len(owned) > 0 {
			// Claim only what the queue has room for: a claimed booking
			// that is not advanced waits out its hold. The partitions take
			// turns at the head, which gets the remainder of an uneven split.
			turn++
			order := append(slices.Clone(owned[turn%len(owned):]), owned[:turn%len(owned)]...)
			now := s.now()
			ids, err := s.store.Claim(ctx, order, now, s.cfg.ClaimHold, max(cap(s.queue)-len(s.queue), 1))
			if err != nil {
				s.log.Warn("claim due bookings", "err", err)
			}
			for _, id := range ids {
				s.enqueue(queued{id: id, until: now.Add(s.cfg.ClaimHold)})
			}
		}
		// Every instance that works part of the index sweeps: a lapsed
		// reservation must not wait for one instance's lease to run out
		// when it crashes. Each claims what it settles (ClaimLapsed), so
		// the sweepers share the work and do not repeat it.
		if len(owned) > 0 {
			s.sweep(ctx)
		}
		cancel()
	}
}

func (s *Service) work() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case q := <-s.queue:
			// Within the claim's hold: past it another scan may claim it.
			// Counted from here, not from the claim: a booking claimed but
			// reached late (workers behind, the instance paused) is still
			// worked, beside another claim of it if its hold ran out, which
			// the booking's compare-and-set keeps safe; skipping it let
			// bookings that were worked a moment ago, due again sooner than
			// a hold, take every claim while it waited (a reviewer's test).
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ClaimHold)
			if err := s.advance(ctx, q); err != nil && !errors.Is(err, context.Canceled) {
				// Due again when its claim hold ends.
				s.log.Debug("advance booking", "booking", q.id, "err", err)
			}
			cancel()
		}
	}
}

// advance moves one open booking on: settle a reservation whose driver
// accepted, expire one the driver let lapse, give up after the deadline
// (recording the unallocated booking for Spampede, if it counts at the
// deadline), or try to allocate again.
func (s *Service) advance(ctx context.Context, q queued) error {
	id := q.id
	b, err := s.store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && !b.Status.Open() {
		// An index entry left behind, forgotten as the claim left it; one
		// a driver's answer queued is left to the scan, which claims it.
		if q.until.IsZero() {
			return nil
		}
		return s.store.Forget(ctx, id, q.until)
	}
	if err != nil {
		return err
	}
	now := s.now()
	switch b.Status {
	case Allocated:
		if now.Before(b.ReservedUntil) {
			return s.store.Schedule(ctx, id, b.ReservedUntil)
		}
		// The booking lets go of the driver before the driver is freed,
		// so that no second booking can reserve the driver while this one
		// still names it; if the release then fails, the sweep frees the
		// driver. A driver who accepted holds the booking: its update
		// after the accept was lost. (No accept can come now: the
		// reservation has lapsed, and an accept lands before that or
		// never, Respond's beforeLapse.)
		d, err := s.driver.Get(ctx, b.DriverID)
		if err != nil && !errors.Is(err, ErrDriverNotFound) {
			return err
		}
		to := Searching
		if acceptedAlready(d, b.ID) {
			to = Accepted
		}
		next, err := transition(b, to, now)
		if err != nil {
			return err
		}
		if err := s.store.Update(ctx, b, next); err != nil || to == Accepted {
			return err
		}
		if err := s.driver.Release(ctx, b.DriverID, b.ID, b.ReservedUntil, true, now); err != nil {
			s.log.Debug("release a lapsed reservation", "driver", b.DriverID, "booking", b.ID, "err", err)
		}
		return nil
	case Searching:
		if !now.Before(b.Deadline) {
			next, err := transition(b, Unallocated, now)
			if err != nil {
				return err
			}
			if err := s.store.Update(ctx, b, next); err != nil {
				return err
			}
			s.metrics.Outcome(OutcomeUnallocated)
			// From when it was due to be given up: its deadline, or its
			// return to searching after a reservation lapsed past it.
			s.metrics.Overrun(now.Sub(later(b.Deadline, b.UpdatedAt)))
			if s.cfg.CountAt != CountDeadline {
				return nil
			}
			return s.admit.RecordUnallocated(ctx, b.Service, b.Pickup.Lat, b.Pickup.Lng, now)
		}
		if _, err := s.tryAllocate(ctx, b); err != nil {
			s.reschedule(ctx, b)
			return err
		}
	}
	return nil
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
