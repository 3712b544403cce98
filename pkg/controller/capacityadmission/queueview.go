package capacityadmission

import (
	"slices"
	"time"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// The queue as users see it (issue 37): the groups of the admission queue
// in the order the next cycle takes them, each with what it asks room for
// and why it waits. It is read under the queue's lock and copied out, so a
// reader never holds up a cycle for longer than the copy.

// Queued is one group of the admission queue.
type Queued struct {
	Key      scheduling.GroupKey
	Priority int32
	Created  time.Time
	// Pods is how many of its pods wait to be placed (gated, and those of
	// roles created later that it reserves room for); Need how many must be
	// placed at once, 0 for an admitted group whose pods join it as they
	// fit.
	Pods, Need int
	// Requests is what those pods request, summed.
	Requests capacity.Resources
	// Reason and Message are why it waits, from the last cycle that placed
	// it; empty until a cycle has.
	Reason, Message string
}

// Queue returns the admission queue in admission order.
func (a *Mode) Queue() []Queued {
	a.queue.mu.Lock()
	cands := make([]capacity.Candidate, 0, len(a.queue.candidates))
	for _, c := range a.queue.candidates {
		cands = append(cands, c)
	}
	waiting := make(map[scheduling.GroupKey]outcome, len(a.queue.waiting))
	for k, o := range a.queue.waiting {
		waiting[k] = o
	}
	a.queue.mu.Unlock()
	slices.SortFunc(cands, func(x, y capacity.Candidate) int { return capacity.CompareCandidates(&x, &y) })
	out := make([]Queued, len(cands))
	for i := range cands {
		out[i] = queuedOf(&cands[i])
		if o, ok := waiting[cands[i].Key]; ok {
			out[i].Reason, out[i].Message = o.Reason, o.Message
		}
	}
	return out
}

// queuedOf is what the queue view shows of a candidate.
func queuedOf(c *capacity.Candidate) Queued {
	q := Queued{Key: c.Key, Priority: c.Priority, Created: c.Created, Pods: len(c.Pods), Need: c.Need}
	for _, p := range c.Pods {
		q.Requests.Add(capacity.PodRequests(p))
	}
	for _, cp := range c.Copies {
		r := capacity.PodRequests(cp.Template)
		for range cp.Count {
			q.Requests.Add(r)
		}
		q.Pods += cp.Count
	}
	return q
}
