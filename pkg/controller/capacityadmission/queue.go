package capacityadmission

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/controller/capacity"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// admissionQueue holds the groups that wait for capacity, and the decisions
// of admission cycles until each group's own sync has recorded them. Groups
// offer themselves from their sync; one goroutine runs the cycles, so that
// every decision is taken on one consistent view of the cluster, in order.
type admissionQueue struct {
	mu         sync.Mutex
	candidates map[scheduling.GroupKey]capacity.Candidate
	// decided are admissions (or placements of an admitted group's pods)
	// that the group's sync has not yet written to status.
	decided map[scheduling.GroupKey]capacity.Verdict
	// waiting says why each group that did not fit waits.
	waiting map[scheduling.GroupKey]outcome
	// parked are the groups that no cycle places until something happens
	// that may let them fit (parked.go).
	parked map[scheduling.GroupKey]parkedGang
	// parkedLast is how many candidates the last cycle took parked.
	parkedLast int
	// flushTokens are the gangs the next cycle may let go for parkedFlush
	// alone, refilled since flushedAt (parked.go).
	flushTokens float64
	flushedAt   time.Time
	// flushAsked says a cycle is asked for, for the gangs still due.
	flushAsked bool
	kick       chan struct{}
}

func newAdmissionQueue() *admissionQueue {
	return &admissionQueue{
		candidates: map[scheduling.GroupKey]capacity.Candidate{},
		decided:    map[scheduling.GroupKey]capacity.Verdict{},
		waiting:    map[scheduling.GroupKey]outcome{},
		parked:     map[scheduling.GroupKey]parkedGang{},
		kick:       make(chan struct{}, 1),
	}
}

// offer puts a group in the next cycle, unless a decision for it is still
// to be recorded. Its sync offers it when it changed: it is placed again.
func (q *admissionQueue) offer(c capacity.Candidate) {
	q.mu.Lock()
	_, pending := q.decided[c.Key]
	if !pending {
		q.candidates[c.Key] = c
		delete(q.parked, c.Key)
	}
	q.mu.Unlock()
	if !pending {
		q.poke()
	}
}

// withdraw takes a group out of the queue: it has nothing left to place.
func (q *admissionQueue) withdraw(key scheduling.GroupKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.candidates, key)
	delete(q.waiting, key)
	delete(q.parked, key)
}

// forget drops everything about a group, decided or not, and reports
// whether a decision was dropped.
func (q *admissionQueue) forget(key scheduling.GroupKey) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, had := q.decided[key]
	delete(q.candidates, key)
	delete(q.waiting, key)
	delete(q.decided, key)
	delete(q.parked, key)
	return had
}

// decision returns the admission decided for a group and not yet recorded.
func (q *admissionQueue) decision(key scheduling.GroupKey) (capacity.Verdict, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	v, ok := q.decided[key]
	return v, ok
}

// recorded drops a decision once the group's status holds it.
func (q *admissionQueue) recorded(key scheduling.GroupKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.decided, key)
}

// waitReason returns why a group last failed to fit.
func (q *admissionQueue) waitReason(key scheduling.GroupKey) (outcome, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	v, ok := q.waiting[key]
	return v, ok
}

// poke asks for a cycle, if any group waits.
func (q *admissionQueue) poke() {
	q.mu.Lock()
	empty := len(q.candidates) == 0
	q.mu.Unlock()
	if empty {
		return
	}
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// snapshot is the candidates of a cycle, each parked one with its
// verdict. Without withParked the parked ones are left out: where a
// parked gang neither closes the queue (StrictFIFO) nor needs its verdict
// again (the autoscaler's plan), it changes nothing in the cycle, which
// then costs what the gangs that events touched cost.
func (q *admissionQueue) snapshot(withParked bool) []capacity.Candidate {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.candidates)
	if !withParked {
		n -= len(q.parked)
	}
	out := make([]capacity.Candidate, 0, max(n, 0))
	q.parkedLast = 0
	for key, c := range q.candidates {
		if p, parked := q.parked[key]; parked {
			q.parkedLast++
			if !withParked {
				continue
			}
			v := p.verdict
			c.Parked = &v
		}
		out = append(out, c)
	}
	return out
}

// ahead is the candidates that come before c in admission order, each
// parked one with its verdict, and how many candidates there are in all,
// c's own group not counted. It leaves the queue as it was (WhatIf).
func (q *admissionQueue) ahead(c *capacity.Candidate) (out []capacity.Candidate, all int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, qc := range q.candidates {
		if key == c.Key {
			continue
		}
		all++
		if capacity.CompareCandidates(&qc, c) > 0 {
			continue
		}
		if p, parked := q.parked[key]; parked {
			v := p.verdict
			qc.Parked = &v
		}
		out = append(out, qc)
	}
	return out, all
}

// empty reports whether no group waits.
func (q *admissionQueue) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.candidates) == 0
}

// apply stores a cycle's outcomes and returns the groups whose sync must
// run: those admitted, and those whose reason to wait changed.
func (q *admissionQueue) apply(verdicts []outcome, now time.Time) (changed []scheduling.GroupKey, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, v := range verdicts {
		if _, ok := q.candidates[v.Key]; ok {
			q.park(v.Verdict, now)
		}
		if v.Hint != nil && v.Hint.Silent {
			continue // an admitted group's pods found no room
		}
		if v.Admit || len(v.Victims) > 0 {
			// An admission, or a preemption: the group's sync records it.
			delete(q.candidates, v.Key)
			delete(q.waiting, v.Key)
			q.decided[v.Key] = v.Verdict
			changed = append(changed, v.Key)
			continue
		}
		if old, ok := q.waiting[v.Key]; !ok || old.Reason != v.Reason || old.Message != v.Message {
			changed = append(changed, v.Key)
		}
		q.waiting[v.Key] = v
	}
	return changed, len(q.waiting)
}

const (
	// cycleResync is how often a cycle runs with no event, as a safety net
	// for a change no event announced.
	cycleResync = 5 * time.Second
	// cycleSpacing is the least time between two cycles: events that arrive
	// meanwhile are served by one cycle, so a storm of pod events costs at
	// most 100 snapshots a second, not one each.
	cycleSpacing = 10 * time.Millisecond
)

// runAdmission runs admission cycles, one at a time, whenever something
// that may let a waiting group fit has changed.
func (a *Mode) runAdmission(ctx context.Context) {
	t := time.NewTicker(cycleResync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.queue.kick:
		case <-t.C:
		}
		a.admitCycle()
		select {
		case <-ctx.Done():
			return
		case <-time.After(cycleSpacing):
		}
	}
}

// admitCycle places every waiting group on one snapshot of the cluster.
// An admitted group's placements are assumed in the tracker at once, so the
// next cycle does not offer that capacity again before the group's status
// records them.
func (a *Mode) admitCycle() {
	if a.queue.empty() {
		a.metrics.Waiting(0)
		return
	}
	start := a.clock.Now()
	// The changes first, with the snapshot that shows them: the parked
	// gangs they may help are placed again (parked.go).
	snap, changes := a.tracker.SnapshotChanges(a.filters)
	a.queue.unparkHelped(changes, snap, start)
	cands := a.observedOnly(a.queue.snapshot(a.strategy == capacity.StrictFIFO || a.autoscale != nil))
	verdicts := outcomesOf(capacity.Admit(snap, cands, a.cycleOptions(start)))
	if a.autoscale != nil {
		a.autoscale.plan(verdicts, start)
	}
	for _, v := range verdicts {
		if v.Admit {
			a.tracker.Assume(v.Key, assignedNodes(v.Verdict))
			a.tracker.AssumeReservations(v.Key, standInSlots(v.Copies))
		}
	}
	changed, waiting := a.queue.apply(verdicts, start)
	a.metrics.Waiting(waiting)
	a.metrics.CycleTook(a.clock.Since(start))
	for _, key := range changed {
		a.enqueue(key)
	}
}

// cycleOptions are an admission cycle's settings at now, for the leader's
// cycles and for a what-if alike.
func (a *Mode) cycleOptions(now time.Time) capacity.Options {
	opts := capacity.Options{Strategy: a.strategy, Now: now, MinRuntime: a.preemptionMinRuntime}
	if a.preemption {
		opts.Victims = func() capacity.Pool { return a.tracker.Victims(a.preemptUnmanaged) }
	}
	if a.autoscale != nil {
		opts.Requests, opts.Autoscaling = a.tracker.Requests, true
	}
	return opts
}

func assignedNodes(v capacity.Verdict) map[types.UID]string {
	out := make(map[types.UID]string, len(v.Assignments))
	for _, a := range v.Assignments {
		out[a.Pod.UID] = a.Node
	}
	return out
}
