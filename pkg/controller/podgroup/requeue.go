package podgroup

import (
	"time"

	"github.com/muster-dev/muster/pkg/controller/admission"
)

// requeueTimers are the times a sync's steps find while they run that decide
// when the group is looked at again; the sync's own waits (a batch still to
// record, a deferred status refresh, a finish or expiry to come) join them in
// requeueAfter.
type requeueTimers struct {
	// nextCheck is the soonest time a deleted pod's grace period ends
	// (classifyPods).
	nextCheck time.Time
	// reserveAfter is when a reservation of a createdLater role times out,
	// or the hold after a status write refused for good ends (step 6).
	reserveAfter time.Duration
}

// requeueAfter is the sync's answer to the queue: the soonest of the timers
// and of waits, 0 for none.
func (t *requeueTimers) requeueAfter(now time.Time, waits ...time.Duration) time.Duration {
	return soonest(append(waits, t.untilNext(now), t.reserveAfter)...)
}

// untilNext is how long until a deleted pod's grace period has surely ended.
func (t *requeueTimers) untilNext(now time.Time) time.Duration {
	if t.nextCheck.IsZero() {
		return 0
	}
	// One second past the grace period, so that the pod is surely past it.
	return t.nextCheck.Sub(now) + time.Second
}

// soonest returns the smallest positive duration, or 0 if there is none.
func soonest(ds ...time.Duration) time.Duration { return admission.Soonest(ds...) }
