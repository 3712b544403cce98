package capacity

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// follower keeps the PreFilter state of a shape's pods that constrain each
// other (one per node, spread, host ports) up to date as they are placed,
// so that each pod after the first costs the scheduler's PreFilter
// extensions for one added pod, not a PreFilter over every node. It is
// what kube-scheduler's preemption does to add nominated pods to a state:
// Clone, then RunPreFilterExtensionAddPod. Running PreFilter for the next
// pod on the snapshot with the last one placed would give the same state,
// provided the two pods read the same inputs (sameFilterInputs); a pod
// that does not gets a PreFilter of its own.
type follower struct {
	state *cycleState
	from  *corev1.Pod
}

// followStates turns following on; tests turn it off to compare.
var followStates = true

// stateFor is the state to filter pod with, or nil for a PreFilter of its
// own.
func (f *follower) stateFor(p *placer, pod *corev1.Pod) *cycleState {
	if !followStates || f.state == nil || !p.sameFilterInputs(f.from, pod) {
		return nil
	}
	return f.state
}

// follow brings the state that pod was filtered with (cs) up to date once
// pod went to node i (-1: nowhere, and nothing changed). Not followed:
//   - pods whose Reserve holds volumes or devices in the state;
//   - pods with DoNotSchedule spread constraints: PodTopologySpread's
//     AddPod keeps only the two least crowded domains of each key, so once
//     a third is the least crowded its state is no longer what PreFilter
//     would compute, and the skew it allows is wrong
//     (TestSchedulerRules, "running pods of the same label count toward
//     the skew"). InterPodAffinity's counts are exact.
func (f *follower) follow(p *placer, pod *corev1.Pod, cs *cycleState, i int) {
	f.state, f.from = nil, nil
	if cs == nil || needsReserve(pod) || hardSpread(pod) {
		return
	}
	if i < 0 {
		f.state, f.from = cs, pod
		return
	}
	ni := p.s.info(i)
	var added *schedfw.PodInfo
	for _, pi := range ni.GetPods() {
		if pi.GetPod().UID == pod.UID {
			added = pi.(*schedfw.PodInfo)
		}
	}
	if added == nil {
		return
	}
	next := &cycleState{state: cs.state.Clone(), result: cs.result}
	if st := p.s.filters.fw.RunPreFilterExtensionAddPod(p.ctx, next.state, pod, added, ni); !st.IsSuccess() {
		return
	}
	f.state, f.from = next, pod
}

// sameFilterInputs reports whether PreFilter would compute the same state
// for b as for a, on the same snapshot: a and b are of one shape (requests,
// node selection, affinity, tolerations), and also agree on their
// namespace, spread constraints, host ports and volumes, and on every label
// that a term may read: the keys of running pods' required anti-affinity
// and of their own affinity and spread terms. Gang members differ in name
// and index labels, which no term reads.
func (p *placer) sameFilterInputs(a, b *corev1.Pod) bool {
	if a.Namespace != b.Namespace ||
		!apiequality.Semantic.DeepEqual(a.Spec.Affinity, b.Spec.Affinity) ||
		!apiequality.Semantic.DeepEqual(a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints) ||
		!apiequality.Semantic.DeepEqual(a.Spec.Volumes, b.Spec.Volumes) ||
		!slices.Equal(schedutil.GetHostPorts(a), schedutil.GetHostPorts(b)) {
		return false
	}
	keys := ownTermKeys(a)
	if keys != nil {
		running := p.antiAffinityKeys()
		if running == nil {
			keys = nil
		} else {
			maps.Copy(keys, running)
		}
	}
	return relevantLabels(a, keys) == relevantLabels(b, keys)
}

// ownTermKeys are the label keys that a pod's own required affinity,
// anti-affinity and spread terms read of pods, its own included (matchLabelKeys
// take their values from it); nil if a term selects on no key, or cannot be
// read: every label matters then.
func ownTermKeys(p *corev1.Pod) map[string]bool {
	keys := map[string]bool{}
	add := func(sel *metav1.LabelSelector, more ...[]string) bool {
		if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
			return false
		}
		for k := range sel.MatchLabels {
			keys[k] = true
		}
		for _, e := range sel.MatchExpressions {
			keys[e.Key] = true
		}
		for _, ks := range more {
			for _, k := range ks {
				keys[k] = true
			}
		}
		return true
	}
	var terms []corev1.PodAffinityTerm
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
		if a.PodAntiAffinity != nil {
			terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
	}
	for _, t := range terms {
		if !add(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys) {
			return nil
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if !add(c.LabelSelector, c.MatchLabelKeys) {
			return nil
		}
	}
	return keys
}

// hardSpread reports whether the pod has a DoNotSchedule spread constraint.
func hardSpread(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.WhenUnsatisfiable == corev1.DoNotSchedule
	})
}
