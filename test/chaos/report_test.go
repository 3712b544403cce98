package chaos

import (
	"slices"
	"testing"
	"time"
)

// report is what a run prints: the counts and the timings.
type report struct {
	pods, gangs              int
	succeeded, failed        int
	deletes, retries, checks int64
	// preemptedGroups show the Preempted condition; evictedGroups had pods
	// evicted by it; preemptedPods are the pods counted preempted.
	preemptedGroups, evictedGroups      int
	preemptedPods, evictedSucceeded     int
	neverBound                          int
	remarked                            []string
	gangRestarts, staleDeletes          int64
	decisions, victims                  int
	gaveUp                              int
	otherDisruptions                    map[string]int
	created, finished, converged, total time.Duration
	killer                              *leaderKiller
	restarts                            []restart
}

func (r report) log(t *testing.T) {
	t.Logf("pods %d in %d gangs: succeeded %d, failed %d (of which deleted while running %d)", r.pods, r.gangs, r.succeeded, r.failed, r.deletes)
	t.Logf("preemption: %d groups preempted (Preempted condition seen), %d with pods evicted; %d pods counted preempted (%d more marked succeeded before the kill); %d gangs restarted by their framework (deleting %d gated pods left of the old generation), %d left waiting after %d generations",
		r.preemptedGroups, r.evictedGroups, r.preemptedPods, r.evictedSucceeded, r.gangRestarts, r.staleDeletes, r.gaveUp, maxGenerations)
	if len(r.remarked) > 0 {
		t.Logf("%d pods marked by Muster's preemption ended with another DisruptionTarget reason (and count as preempted): %s", len(r.remarked), first(r.remarked))
	}
	if r.neverBound > 0 {
		t.Logf("%d pods were deleted before they were bound and counted nowhere", r.neverBound)
	}
	t.Logf("preemptions seen in the preemptors' status: %d, choosing %d victims", r.decisions, r.victims)
	if len(r.otherDisruptions) > 0 {
		t.Logf("pods disrupted other than by Muster's preemption, by reason: %v", r.otherDisruptions)
	}
	t.Logf("held-gang checks %d; requests retried during the chaos %d", r.checks, r.retries)
	t.Logf("all created after %s, all finished after %s (%.0f pods/s), counts checked after %s",
		r.created.Round(time.Second), r.finished.Round(time.Second), float64(r.pods)/r.finished.Seconds(),
		r.converged.Round(time.Second))
	k := r.killer
	k.mu.Lock()
	failovers := slices.Clone(k.failovers)
	kills, errs := k.kills, len(k.errors)
	k.mu.Unlock()
	slices.Sort(failovers)
	if len(failovers) > 0 {
		t.Logf("R1: leader killed %d times; next leader after p50 %s, max %s; replica restarts retried %d times",
			kills, failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond), errs)
	} else {
		t.Logf("R1: leader killed %d times", kills)
	}
	for _, rs := range r.restarts {
		if rs.err != nil {
			t.Logf("R2: %s at %d pods created: %v", rs.component, rs.atPods, rs.err)
			continue
		}
		kwok := ""
		if rs.kwok {
			kwok = "; kwok restarted after it"
		}
		t.Logf("R2: %s restarted at %d pods created: ready %s after start; both APIs answered %s after start (%s after the kill)%s",
			rs.component, rs.atPods, rs.times.Ready.Sub(rs.times.Started).Round(time.Millisecond),
			rs.sinceStart().Round(time.Millisecond), rs.downtime().Round(time.Millisecond), kwok)
	}
}
