// Package booking is the booking pipeline: validate → Spampede admission →
// allocate a driver → persist, with idempotent creation, background
// allocation by owned workers until a deadline, and the booking's own state
// machine. It is pure: storage, allocation and admission are interfaces.
package booking
