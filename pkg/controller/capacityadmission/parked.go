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

// parkedFlushPerCycle bounds the gangs one cycle lets go for parkedFlush
// alone. Gangs parked together come due together, and placing a deep
// backlog in one cycle holds up the gangs that fit, which that cycle
// would admit: `make scale` saw a probe's release p99 go from 87 ms to
// 273 ms when 200 gangs came due during its probes. The others come due
// in the next cycles, which run at least every cycleResync.
const parkedFlushPerCycle = 4

// parkedGang is a parked gang's last verdict, and since when it is parked.
type parkedGang struct {
	verdict capacity.Verdict
	since   time.Time
}

// unparkHelped lets go of every parked gang that the changes ch, seen on
// snapshot s, may help, that asked for it (its capacity-request pods
// changed), or that has been parked for parkedFlush, parkedFlushPerCycle
// of those at the most. Gangs of one shape
// share one look at the freed nodes.
func (q *admissionQueue) unparkHelped(ch capacity.Changes, s *capacity.Snapshot, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.parked) == 0 {
		return
	}
	look := capacity.NewHintLook(ch, s, now)
	flushed := 0
	for key, p := range q.parked {
		switch {
		case ch.Requested[key] || look.Helps(p.verdict.Hint):
			delete(q.parked, key)
		case flushed < parkedFlushPerCycle && now.Sub(p.since) >= parkedFlush:
			delete(q.parked, key)
			flushed++
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
