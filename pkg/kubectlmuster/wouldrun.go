package kubectlmuster

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// wouldLetItRun says, from the reason admission gives, what would let a
// waiting gang run; the condition's message says how much is short.
func wouldLetItRun(pg *v1alpha1.PodGroup, admitted *metav1.Condition) string {
	if meta := pg.Status.Phase; meta == v1alpha1.PodGroupSucceeded || meta == v1alpha1.PodGroupFailed {
		return fmt.Sprintf("nothing: it has finished (%s)", meta)
	}
	if admitted == nil {
		return "the controller has not judged it yet"
	}
	if admitted.Status == metav1.ConditionTrue {
		return "nothing: it is admitted"
	}
	switch admitted.Reason {
	case scheduling.ReasonWaitingForPods:
		need := int32(0)
		if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
			need = g.MinCount
		}
		return fmt.Sprintf("more pods: it is admitted once %d are present (minCount), and %d are active", need, pg.Status.Active)
	case scheduling.ReasonInsufficientCapacity:
		return "room: it is admitted whole once what the message names is free, after the gangs ahead of it in admission order; " +
			"a higher priority would let it preempt gangs of lower priority"
	case scheduling.ReasonExceedsClusterCapacity:
		return "nodes: even the idle cluster cannot hold it; add nodes its pods fit on, or ask for fewer or smaller pods"
	case scheduling.ReasonQueued:
		return "the head of the StrictFIFO queue: gangs ahead of it go first"
	case scheduling.ReasonPreempting:
		return "its victims' pods to be deleted: their room is held for it meanwhile"
	case scheduling.ReasonWaitingForNodes:
		return "the autoscaler to provide the room it was asked for"
	case scheduling.ReasonNodesNotProvisioned:
		return "the autoscaler: its request was withdrawn, and it asks again at the time the message gives"
	case scheduling.ReasonReservationOverQuota:
		return "quota: the namespace's ResourceQuota must hold the places reserved for the pods created later"
	case scheduling.ReasonOtherSchedulingGates, scheduling.ReasonSchedulingGated:
		return "the other scheduling gates on its pods to be removed, by whoever put them there"
	case scheduling.ReasonOrderedReadyStatefulSet:
		return "podManagementPolicy: Parallel: an OrderedReady StatefulSet creates one pod at a time, and never a whole gang"
	case scheduling.ReasonMinCountTooLarge:
		return "a smaller minCount"
	}
	return "what the Admitted message says"
}
