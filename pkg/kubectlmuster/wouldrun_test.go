package kubectlmuster

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestWouldLetItRun(t *testing.T) {
	gang := func(phase v1alpha1.PodGroupPhase, active int32) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{
			Spec:   v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 8}}},
			Status: v1alpha1.PodGroupStatus{Phase: phase, Active: active},
		}
	}
	waiting := func(reason string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse, Reason: reason}
	}
	tests := []struct {
		name     string
		pg       *v1alpha1.PodGroup
		admitted *metav1.Condition
		want     string
	}{
		{"finished", gang(v1alpha1.PodGroupSucceeded, 0), nil, "nothing: it has finished (Succeeded)"},
		{"not judged", gang(v1alpha1.PodGroupPending, 0), nil, "has not judged it"},
		{"admitted", gang(v1alpha1.PodGroupRunning, 8), &metav1.Condition{Status: metav1.ConditionTrue, Reason: scheduling.ReasonGangFits}, "nothing: it is admitted"},
		{"short of pods", gang(v1alpha1.PodGroupPending, 5), waiting(scheduling.ReasonWaitingForPods), "once 8 are present (minCount), and 5 are active"},
		{"short of room", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonInsufficientCapacity), "room: it is admitted whole"},
		{"larger than the cluster", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonExceedsClusterCapacity), "even the idle cluster cannot hold it"},
		{"queued", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonQueued), "StrictFIFO"},
		{"preempting", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonPreempting), "victims' pods to be deleted"},
		{"autoscaler asked", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonWaitingForNodes), "the autoscaler to provide"},
		{"autoscaler withdrawn", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonNodesNotProvisioned), "asks again"},
		{"over quota", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonReservationOverQuota), "ResourceQuota"},
		{"other gates", gang(v1alpha1.PodGroupPending, 8), waiting(scheduling.ReasonOtherSchedulingGates), "other scheduling gates"},
		{"ordered StatefulSet", gang(v1alpha1.PodGroupPending, 1), waiting(scheduling.ReasonOrderedReadyStatefulSet), "Parallel"},
		{"unknown reason", gang(v1alpha1.PodGroupPending, 8), waiting("SomethingNew"), "what the Admitted message says"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wouldLetItRun(tt.pg, tt.admitted); !strings.Contains(got, tt.want) {
				t.Errorf("wouldLetItRun = %q, want it to say %q", got, tt.want)
			}
		})
	}
}
