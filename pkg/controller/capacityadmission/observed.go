package capacityadmission

import (
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// A group's sync reads its pods from the informer's store, which client-go
// updates before it calls the informer's handlers; the tracker, which the
// handlers feed (ObservePod), may not have a pod that the sync offered yet.
// A placement assumed for such a pod holds nothing until the pod is
// observed, and the cycles in between offer its room again: on a node that
// best fit fills to its last pod slot, two gangs are pinned to one slot and
// one of them stalls. So a cycle leaves out a candidate with a pod the
// tracker has not observed. It keeps its place in the queue, and the
// handler that observes the pod asks for the next cycle.

// observedOnly returns the candidates whose pods the tracker has all
// observed. Under StrictFIFO the candidates after a left-out one, in the
// queue's order, are left out too: nothing passes the gang that would be
// the head.
func (a *Mode) observedOnly(cands []capacity.Candidate) []capacity.Candidate {
	var (
		unobserved []bool
		first      *capacity.Candidate
	)
	for i := range cands {
		if a.tracker.Observed(cands[i].Pods) {
			continue
		}
		if unobserved == nil {
			unobserved = make([]bool, len(cands))
		}
		unobserved[i] = true
		if first == nil || capacity.CompareCandidates(&cands[i], first) < 0 {
			first = &cands[i]
		}
	}
	if first == nil {
		return cands
	}
	out := make([]capacity.Candidate, 0, len(cands))
	for i := range cands {
		if unobserved[i] || a.strategy == capacity.StrictFIFO && capacity.CompareCandidates(&cands[i], first) > 0 {
			continue
		}
		out = append(out, cands[i])
	}
	return out
}
