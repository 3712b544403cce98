package capacityadmission

import (
	"time"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
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

// Gangs let go for parkedFlush alone are paced: parkedFlushRate a second,
// parkedFlushPerCycle at once at the most. Gangs parked together come due
// together, and placing a deep backlog in one cycle, or in every one of
// the hundred cycles a busy second runs, holds up the gangs that fit,
// which those cycles would admit: `make scale` saw a probe's release p99
// go from 87 ms to 273 ms when 200 gangs came due during its probes. At
// that pace, 1,000 gangs parked at once are all placed again 4 minutes
// after they come due; while some are due, a cycle is asked for every
// second (flushSoon), so the pace holds when no event runs cycles.
const (
	parkedFlushRate     = 4.0
	parkedFlushPerCycle = 4
)

// parkedGang is a parked gang's last verdict, and since when it is parked.
type parkedGang struct {
	verdict capacity.Verdict
	since   time.Time
}

// unparkHelped lets go of every parked gang that the changes ch, seen on
// snapshot s, may help, that asked for it (its capacity-request pods
// changed), or that has been parked for parkedFlush, at the pace
// parkedFlushRate sets. Gangs of one shape
// share one look at the freed nodes.
func (q *admissionQueue) unparkHelped(ch capacity.Changes, s *capacity.Snapshot, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.parked) == 0 {
		return
	}
	look := capacity.NewHintLook(ch, s, now)
	q.flushTokens = min(parkedFlushPerCycle, q.flushTokens+parkedFlushRate*now.Sub(q.flushedAt).Seconds())
	q.flushedAt = now
	for key, p := range q.parked {
		switch {
		case helped(look, ch, key, p.verdict):
			delete(q.parked, key)
		case now.Sub(p.since) < parkedFlush:
		case q.flushTokens >= 1:
			delete(q.parked, key)
			q.flushTokens--
		default:
			q.flushSoon()
		}
	}
}

// helpedOf clears, in cands, the parked verdict of each gang that the
// changes ch may help, as unparkHelped lets it go: the next cycle places
// those again. The gangs due for their flush are not let go: parked, none
// can fit on what the snapshot shows (TestParkingChangesNoDecision). It
// leaves the queue as it was (WhatIf).
func helpedOf(cands []capacity.Candidate, ch capacity.Changes, s *capacity.Snapshot, now time.Time) {
	look := capacity.NewHintLook(ch, s, now)
	for i := range cands {
		if p := cands[i].Parked; p != nil && helped(look, ch, cands[i].Key, *p) {
			cands[i].Parked = nil
		}
	}
}

// helped says whether the changes ch, looked at through look, may help a
// gang parked with verdict v, or it asked for them (its capacity-request
// pods changed): then the next cycle places it again.
func helped(look *capacity.HintLook, ch capacity.Changes, key scheduling.GroupKey, v capacity.Verdict) bool {
	return ch.Requested[key] || look.Helps(v.Hint)
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

// flushSoon asks for a cycle in a second, once: gangs are due for their
// flush, and the pace left them parked. Called with q.mu held.
func (q *admissionQueue) flushSoon() {
	if q.flushAsked {
		return
	}
	q.flushAsked = true
	time.AfterFunc(time.Second, func() {
		q.mu.Lock()
		q.flushAsked = false
		q.mu.Unlock()
		q.poke()
	})
}
