package booking

import (
	"context"
	"errors"

	"github.com/apollo-platform/apollo/internal/driver"
)

// sweepBatch bounds the lapsed reservations one scan settles.
const sweepBatch = 100

// sweep frees drivers whose reservation lapsed and that no booking holds:
// a reservation whose booking update was lost or was ambiguous, one left by
// a process that crashed between reserving and updating the booking, one
// whose release failed, or one that a failover kept while the booking's
// update was lost. Without it such a driver stays reserved, and out of the
// geo index, for ever.
//
// A reservation its booking still holds (allocated to the driver, or
// accepted with it) is left to the booking; any other is expired, or
// declined if the driver had accepted. Every instance that holds a
// partition sweeps (workers.go): ClaimLapsed hands each lapsed reservation
// to one of them for the hold, and should a hold run out mid-sweep, the
// driver store's compare-and-set makes two sweeps of one driver harmless.
func (s *Service) sweep(ctx context.Context) {
	if s.reserved == nil {
		return
	}
	now := s.now()
	lapsed, err := s.reserved.ClaimLapsed(ctx, now, s.cfg.ClaimHold, sweepBatch)
	if err != nil { // the parts of the index it could read are swept all the same
		s.log.Warn("claim lapsed reservations", "err", err)
	}
	for _, d := range lapsed {
		// A booking that still names its driver frees it itself (its
		// expiry, or the accept it settles): the sweep is for the others.
		if s.holds(ctx, d) {
			continue
		}
		err := s.driver.Release(ctx, d.ID, d.BookingID, d.ReservedUntil, !d.Accepted, now)
		if err != nil && !errors.Is(err, ErrDriverAccepted) {
			s.log.Warn("sweep a lapsed reservation", "driver", d.ID, "booking", d.BookingID, "err", err)
			continue
		}
		s.log.Info("swept a lapsed reservation", "driver", d.ID, "booking", d.BookingID, "accepted", d.Accepted)
	}
}

// holds reports whether the booking of d's lapsed reservation holds d.
// When the booking cannot be read, it is taken to hold the driver: the
// next sweep looks again. An accepted booking whose lapsed driver has not
// accepted is a back-out that stopped half way (Respond), or an accept a
// failover lost: the booking lets go of the driver here, before the sweep
// frees it.
func (s *Service) holds(ctx context.Context, d driver.Driver) bool {
	b, err := s.store.Get(ctx, d.BookingID)
	if errors.Is(err, ErrNotFound) {
		return false
	}
	if err != nil || b.DriverID != d.ID {
		return err != nil
	}
	switch b.Status {
	case Allocated:
		return true
	case Accepted:
		// Not accepted past its end (an accept lands before it or never):
		// withdrawn, or one whose accept a failover lost; either way no
		// trip can start, and the booking must let go.
		if d.Accepted {
			return true
		}
		err := s.follow(ctx, b.ID, d.ID, Searching, d.ReservedUntil, true)
		if err != nil {
			s.log.Warn("finish a driver's back-out", "driver", d.ID, "booking", b.ID, "err", err)
		}
		// ErrIllegal: the booking holds the driver under another
		// reservation than this lapsed one (a rollback), which is free.
		return err != nil && !errors.Is(err, ErrIllegal)
	}
	return false
}
