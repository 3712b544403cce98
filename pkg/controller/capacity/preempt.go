package capacity

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// maxSingles is how many victims, one at a time, preemption tries alone
// before it looks for a set of them: the fewest victims is one when any
// one suffices.
const maxSingles = 32

// choice is a preemption found for a candidate: the victims, and where the
// candidate's pods go once they are gone.
type choice struct {
	victims []*Victim
	res     Result
}

// preempt finds the victims whose removal lets c fit on s, among pool's
// that are of strictly lower priority and not taken by an earlier
// preemptor of the cycle. The victims are, in this order of preference:
//   - the fewest: one victim that suffices alone is taken over any set;
//   - of the lowest priority;
//   - the most recently admitted (or created, for a pod).
//
// Each victim is taken whole. On success the victims are off s and the
// result is placed but neither committed nor discarded: the caller commits
// it. On failure s is as it was, and why says what stood in the way.
func (s *Snapshot) preempt(c Candidate, pool []*Victim, taken map[*Victim]bool) (ch choice, ok bool, why string) {
	// fits tries c with vs gone, and leaves s as it was unless keep.
	fits := func(vs []*Victim, keep bool) (Result, bool) {
		undo := s.evict(vs)
		res := c.place(s)
		ok := res.Placed() >= c.Need
		if !ok || !keep {
			s.Discard(res)
			undo()
		}
		return res, ok
	}
	// Preemption places without the rule that guards nodes kube-scheduler
	// still sees full (draining.go). A gang that only that rule refuses
	// fits once the pods being deleted are gone: any victim would be one
	// it does not need.
	if _, ok := fits(nil, false); ok {
		return ch, false, "no preemption: it fits once the pods being deleted are gone"
	}
	var eligible []*Victim
	higher := 0
	for _, v := range pool {
		switch {
		case taken[v]:
		case v.Priority < c.Priority:
			eligible = append(eligible, v)
		default:
			higher++
		}
	}
	if len(eligible) == 0 {
		if higher > 0 {
			return ch, false, fmt.Sprintf("preemption cannot help: the room is held by %d gang(s) or pod(s) of equal or higher priority (%d or more)", higher, c.Priority)
		}
		return ch, false, "preemption cannot help: nothing of lower priority holds capacity"
	}
	sort.SliceStable(eligible, func(i, j int) bool {
		a, b := eligible[i], eligible[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.Since.Equal(b.Since) {
			return a.Since.After(b.Since)
		}
		return a.Key < b.Key
	})

	if _, ok := fits(eligible, false); !ok {
		return ch, false, fmt.Sprintf("preemption cannot help: even with all %d gang(s) or pod(s) of lower priority gone it does not fit", len(eligible))
	}
	// One victim alone, in order of preference.
	for _, v := range eligible[:min(len(eligible), maxSingles)] {
		if res, ok := fits([]*Victim{v}, true); ok {
			return choice{victims: []*Victim{v}, res: res}, true, ""
		}
	}
	// The shortest prefix, in order of preference, that makes room: removing
	// more never makes room scarcer, so a binary search finds it.
	n := sort.Search(len(eligible), func(k int) bool {
		_, ok := fits(eligible[:k+1], false)
		return ok
	}) + 1
	set := append([]*Victim(nil), eligible[:n]...)
	// Spare those not needed after all, the most valuable first (highest
	// priority, longest running), as kube-scheduler reprieves its victims.
	for i := len(set) - 1; i >= 0 && len(set) > 1; i-- {
		rest := append(append([]*Victim(nil), set[:i]...), set[i+1:]...)
		if _, ok := fits(rest, false); ok {
			set = rest
		}
	}
	if len(set) > scheduling.MaxPreemptionVictims {
		return ch, false, fmt.Sprintf("preemption cannot help: it would take %d victims, more than %d", len(set), scheduling.MaxPreemptionVictims)
	}
	res, ok := fits(set, true)
	if !ok {
		// Placement is not monotone everywhere (pod affinity may need a
		// victim's pods); what the search found does not hold.
		return ch, false, "preemption cannot help: no set of lower-priority victims was found that makes room"
	}
	return choice{victims: set, res: res}, true, ""
}

// describeVictims names victims for a message on a group of namespace ns:
// kind, name, priority and pods, at most five, then how many more. A victim
// in another namespace is named by kind and priority alone, since whoever
// may read the group need not see that namespace (docs/threat-model.md).
func describeVictims(ns string, vs []*Victim) string {
	var parts []string
	for i, v := range vs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-5))
			break
		}
		if vns, name, _ := cache.SplitMetaNamespaceKey(v.Key); vns == ns {
			parts = append(parts, fmt.Sprintf("%s %s (priority %d, %d pods)", v.Kind, name, v.Priority, v.Pods()))
		} else {
			parts = append(parts, fmt.Sprintf("a %s in another namespace (priority %d, %d pods)", v.Kind, v.Priority, v.Pods()))
		}
	}
	return strings.Join(parts, ", ")
}
