package capacityadmission

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// What-if (issue 37): what admission would decide for a gang that does not
// exist yet. The gang meets the cycle it would meet if it were created
// now: the gangs waiting now that come before it in admission order (a
// new gang comes after every gang of its priority that waits), on a
// snapshot of the cluster as admission sees it, with the parked gangs
// that the next cycle would place again (parked.go) placed again. The
// snapshot is its own and is thrown away: nothing is written, reserved,
// assumed or recorded, the queue is left as it was, and no autoscaler is
// asked (what would be asked of it is said). The gangs behind it in the
// order cannot change its verdict, so they are left out.

// WhatIf is the answer for one gang.
type WhatIf struct {
	// Verdict is the cycle's verdict for the gang: admitted, with where
	// each pod goes (Assignments, by the pods given), or why it waits
	// (Cause and Message), or the victims it would preempt.
	Verdict capacity.Verdict
	// Position is the gang's place in admission order among the groups
	// in the admission queue now (gangs that wait, and admitted groups
	// placing pods that joined them, which go first among equal
	// priority), from 1; Waiting counts those groups, the gang included.
	// Ahead are the keys of the groups before it, in admission order.
	Position, Waiting int
	Ahead             []scheduling.GroupKey
	// AheadQueued are the same groups as the queue view shows them.
	AheadQueued []Queued
	// Priority is the gang's, as admission orders it.
	Priority int32
	// Reason is the Admitted condition's reason for the verdict ("" when
	// admitted).
	Reason string
	// Nodes are where the verdict puts each of the pods given, by their
	// index: "" for a pod it places nowhere.
	Nodes []string
	// Ask is what the autoscaler would be asked for the gang, when Muster
	// asks one (nil otherwise): plan's rules, on the requests that stand.
	Ask *WhatIfAsk
}

// WhatIf runs the cycle a gang would meet if it were created now: pg is
// its group as it would be stored (created now, whatever pg says), pods
// its pods as kube-apiserver would admit them (priority resolved), need
// how many of them must be placed at once. Pods need no UID; they get one
// of their own for the snapshot.
func (a *Mode) WhatIf(pg *v1alpha1.PodGroup, pods []*corev1.Pod, need int32, now time.Time) WhatIf {
	pg = pg.DeepCopy()
	// As kube-apiserver stores it: to the second.
	pg.CreationTimestamp = metav1.NewTime(now).Rfc3339Copy()
	key := scheduling.NewGroupKey(pg.Namespace, pg.Name)
	pods = withUIDs(pods)
	g := admission.Group{Key: key, PodGroup: pg, Pods: pods, Gated: pods, Present: int32(len(pods)), Active: int32(len(pods))}
	toPlace, free, _ := a.splitUnmodelled(pods)
	c := a.gangCandidate(g, toPlace, laterCopies(pg, g.LaterMissing()), need-int32(free))

	ahead, all := a.queue.ahead(&c)
	slices.SortFunc(ahead, func(x, y capacity.Candidate) int { return capacity.CompareCandidates(&x, &y) })
	observed := a.observedOnly(ahead)
	out := WhatIf{Position: len(ahead) + 1, Waiting: all + 1, Priority: c.Priority}
	for i := range ahead {
		out.Ahead = append(out.Ahead, ahead[i].Key)
		out.AheadQueued = append(out.AheadQueued, queuedOf(&ahead[i]))
	}
	if a.strategy == capacity.StrictFIFO && len(observed) < len(ahead) {
		// The cycle leaves out what comes after a gang whose pods admission
		// has not seen yet (observed.go), for the moment it takes.
		out.Verdict = capacity.Verdict{Key: key, Cause: capacity.CauseQueued,
			Message: "queued behind a gang whose pods admission is still taking in (StrictFIFO)"}
		out.Reason = outcomeOf(out.Verdict).Reason
		return out
	}
	ahead = observed
	// The changes since the last cycle let the parked gangs they help go,
	// in the next cycle: they are placed again here too.
	snap, changes := a.tracker.SnapshotPending(a.filters)
	helpedOf(ahead, changes, snap, now)
	verdicts := capacity.Admit(snap, append(ahead, c), a.cycleOptions(now))
	for _, v := range verdicts {
		if v.Key == key {
			out.Verdict = v
			out.Reason = outcomeOf(v).Reason
			out.Nodes = nodesByIndex(pods, v)
			if a.autoscale != nil {
				ask := a.autoscale.wouldAsk(v, a.autoscale.demandOf(pg, c.Pods, c.Copies), out.Ahead)
				out.Ask = &ask
			}
			return out
		}
	}
	// Admit gives a verdict for every candidate; this is a defect, said
	// as the gang's answer rather than as a crash.
	out.Verdict = capacity.Verdict{Key: key, Cause: capacity.CauseQueued, Message: "the admission cycle gave the gang no verdict"}
	out.Reason = outcomeOf(out.Verdict).Reason
	return out
}

// withUIDs returns pods, each with a UID: its own, or one made up for the
// snapshot, where placement tells pods apart by UID.
func withUIDs(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		if p.UID == "" {
			p = p.DeepCopy()
			p.UID = types.UID(fmt.Sprintf("whatif-%d", i))
		}
		out[i] = p
	}
	return out
}

// nodesByIndex is where v puts each of pods, by index.
func nodesByIndex(pods []*corev1.Pod, v capacity.Verdict) []string {
	at := make(map[types.UID]string, len(v.Assignments))
	for _, as := range v.Assignments {
		at[as.Pod.UID] = as.Node
	}
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = at[p.UID]
	}
	return out
}
