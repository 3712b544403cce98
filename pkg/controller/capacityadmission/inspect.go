package capacityadmission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// What the controller's tests drive and read of capacity admission: they
// run its cycles by hand, on a fake clock and filters of their own, and
// check what it queued and decided.

// RunCycle runs one admission cycle now.
func (a *Mode) RunCycle() { a.admitCycle() }

// UseClock replaces the clock, before the first sync.
func (a *Mode) UseClock(c clock.PassiveClock) { a.clock = c }

// UseFilters replaces the scheduler's filters, before the first cycle.
func (a *Mode) UseFilters(f *capacity.Filters) { a.filters = f }

// SetNode tells the tracker of a node, as the node informer does.
func (a *Mode) SetNode(n *corev1.Node) { a.setNode(n) }

// WaitReason is the reason and message of the Admitted=False with which the
// last cycle left a group waiting.
func (a *Mode) WaitReason(key scheduling.GroupKey) (reason, message string, ok bool) {
	o, ok := a.queue.waitReason(key)
	return o.Reason, o.Message, ok
}

// Decided reports whether a cycle's decision for a group waits for the
// group's status to record it.
func (a *Mode) Decided(key scheduling.GroupKey) bool {
	_, ok := a.queue.decision(key)
	return ok
}

// Offered reports whether a group waits in the queue for the next cycle.
func (a *Mode) Offered(key scheduling.GroupKey) bool {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	_, ok := a.queue.candidates[key]
	return ok
}

// Snapshot is a snapshot of the tracker, as the next cycle would take it.
func (a *Mode) Snapshot() *capacity.Snapshot { return a.tracker.Snapshot(a.filters) }
