package capacityadmission

import (
	"time"

	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// A gang that did not fit is parked with its verdict and the hint that
// says what could change it (capacity/hint.go). Each cycle first takes the
// tracker's changes since the last one, and lets go of the parked gangs
// they may help; the others keep their place and their verdict, unplaced.
// So a cycle places the gangs that an event touched, not the whole queue,
// and an idle backlog costs a sort and a look at each hint.

// parkedFlush is how long a gang stays parked with nothing to help it
// before it is placed again anyway, as kube-scheduler moves a pod out of
// its unschedulable queue after five minutes: a safety net for a change
// that no hint follows.
const parkedFlush = 5 * time.Minute

// parkedGang is a parked gang's last verdict, and since when it is parked.
type parkedGang struct {
	verdict capacity.Verdict
	since   time.Time
}

// unparkHelped lets go of every parked gang that the changes ch, seen on
// snapshot s, may help, that asked for it (its capacity-request pods
// changed), or that has been parked for parkedFlush. Gangs of one shape
// share one look at the freed nodes.
func (q *admissionQueue) unparkHelped(ch capacity.Changes, s *capacity.Snapshot, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.parked) == 0 {
		return
	}
	look := capacity.NewHintLook(ch, s, now)
	for key, p := range q.parked {
		if ch.Requested[key] || now.Sub(p.since) >= parkedFlush || look.Helps(p.verdict.Hint) {
			delete(q.parked, key)
		}
	}
}

// park records the verdicts of a cycle: a gang with a hint is parked (or
// stays parked, since it was), any other is placed again next cycle.
// Called with q.mu held.
func (q *admissionQueue) park(v capacity.Verdict, now time.Time) {
	if v.Hint == nil || v.Admit || len(v.Victims) > 0 {
		delete(q.parked, v.Key)
		return
	}
	if _, ok := q.parked[v.Key]; ok {
		return
	}
	q.parked[v.Key] = parkedGang{verdict: v, since: now}
}
