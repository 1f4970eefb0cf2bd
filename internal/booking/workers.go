package booking

import (
	"context"
	"errors"
	"time"
)

// Start runs the background work until Stop: a scanner that picks up every
// open booking each ScanEvery (so bookings left by a stopped process are
// resumed or expired, never stuck), except those waiting out a retry gap,
// and Workers goroutines that allocate.
func (s *Service) Start() {
	s.wg.Add(1 + s.cfg.Workers)
	go s.scan()
	for i := 0; i < s.cfg.Workers; i++ {
		go s.work()
	}
}

// Stop ends the background work and waits for it.
func (s *Service) Stop() {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
}

func (s *Service) scan() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.ScanEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ScanEvery)
		ids, err := s.store.Open(ctx, s.cfg.Queue)
		cancel()
		if err != nil {
			s.log.Warn("scan open bookings", "err", err)
			continue
		}
		now := s.now()
		for _, id := range ids {
			if s.retry.isDue(id, now) {
				s.enqueue(id)
			}
		}
		s.retry.prune(now, s.cfg.RetryMax+2*s.cfg.ScanEvery)
	}
}

func (s *Service) work() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case id := <-s.queue:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.advance(ctx, id); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Debug("advance booking", "booking", id, "err", err)
			}
			cancel()
		}
	}
}

// advance moves one open booking on: expire a reservation the driver let
// lapse, give up after the deadline (recording the unallocated booking
// for Spampede, if it counts at the deadline), or try to allocate again.
func (s *Service) advance(ctx context.Context, id string) error {
	b, err := s.store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && b.Status.Final() {
		s.retry.forget(id)
		return s.store.Forget(ctx, id) // an index entry left behind
	}
	if err != nil {
		return err
	}
	now := s.now()
	switch b.Status {
	case Allocated:
		if now.Before(b.ReservedUntil) {
			return nil
		}
		if err := s.driver.Release(ctx, b.DriverID, b.ID, true, now); err != nil {
			return err
		}
		next, err := transition(b, Searching, now)
		if err != nil {
			return err
		}
		return s.store.Update(ctx, b, next)
	case Searching:
		if !now.Before(b.Deadline) {
			s.retry.forget(id)
			next, err := transition(b, Unallocated, now)
			if err != nil {
				return err
			}
			if err := s.store.Update(ctx, b, next); err != nil || s.cfg.CountAt != CountDeadline {
				return err
			}
			return s.admit.RecordUnallocated(ctx, b.Service, b.Pickup.Lat, b.Pickup.Lng, now)
		}
		if _, err := s.tryAllocate(ctx, b); err != nil {
			s.retry.missed(id, s.now(), b.Deadline)
			return err
		}
		s.retry.forget(id)
	}
	return nil
}
