package visibility

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
)

// pending is the queue as namespace ("": all) may see it, in admission
// order: its own gangs, each with its place among all and the gangs of
// other namespaces ahead of it counted by priority. The names of the
// gangs ahead are left out of a list: the positions give the order, and
// naming them for every gang would grow as the square of the queue.
func pending(queue []capacityadmission.Queued, namespace string) []v1alpha1.PendingPodGroup {
	var out []v1alpha1.PendingPodGroup
	// The gangs ahead of each one, counted as the walk goes: all of them,
	// and each namespace's, so that the others are one subtraction.
	all, own := tally{}, map[string]tally{}
	for i, q := range queue {
		ns := q.Key.Namespace
		if namespace == "" || ns == namespace {
			out = append(out, v1alpha1.PendingPodGroup{
				TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PendingPodGroup"},
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: q.Key.Name,
					CreationTimestamp: metav1.NewTime(q.Created),
				},
				Queue: v1alpha1.QueuePosition{
					Position: int32(i + 1), Waiting: int32(len(queue)),
					AheadElsewhere: all.less(own[ns]),
				},
				Priority: q.Priority,
				Pods:     int32(q.Pods),
				MinCount: int32(q.Need),
				Needs:    q.Requests.List(),
				Reason:   q.Reason,
				Message:  q.Message,
			})
		}
		all.add(q)
		if own[ns] == nil {
			own[ns] = tally{}
		}
		own[ns].add(q)
	}
	return out
}

// tally counts gangs and their pods by priority.
type tally map[int32]v1alpha1.QueuedCount

func (t tally) add(q capacityadmission.Queued) {
	c := t[q.Priority]
	c.Priority, c.Gangs, c.Pods = q.Priority, c.Gangs+1, c.Pods+int32(q.Pods)
	t[q.Priority] = c
}

// less is t without o's counts, by priority, highest first.
func (t tally) less(o tally) []v1alpha1.QueuedCount {
	var out []v1alpha1.QueuedCount
	for p, c := range t {
		c.Gangs -= o[p].Gangs
		c.Pods -= o[p].Pods
		if c.Gangs > 0 {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.QueuedCount) int { return cmp.Compare(b.Priority, a.Priority) })
	return out
}
