package podgroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// countedFor is a pod the controller counted with result in the group of
// UID group: its finalizer is off, its label says so.
func countedFor(result corev1.PodPhase, group types.UID) podMod {
	return func(p *corev1.Pod) {
		if result == corev1.PodSucceeded {
			succeeded(p)
		} else {
			failed(p)
		}
		p.Finalizers = nil
		p.Labels[scheduling.CountedLabel] = scheduling.CountedValue(result, group)
	}
}

// TestSyncRecoverCounts is step 5b: counts a group's status lost (Muster's
// etcd restored from an older snapshot) come back from the pods the
// controller labelled when it counted them, and the group is never judged
// Failed on counts that may be short.
func TestSyncRecoverCounts(t *testing.T) {
	ok, bad := countedFor(corev1.PodSucceeded, "uid-group"), countedFor(corev1.PodFailed, "uid-group")
	cases := []struct {
		name  string
		cfg   func(*Config)
		objs  []runtime.Object
		check func(t *testing.T, h *harness)
	}{{
		name: "counted pods that status holds change nothing",
		objs: objects(admitted(3, counts(2, 0), uncounted(nil, []types.UID{"uid-c"})),
			newPod("a", ok), newPod("b", ok), newPod("c", bad), newPod("d", running)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 2, 1) // c moves from uncounted to failed, step 11
			wantNoCondition(t, pg, v1alpha1.ConditionCountsRecovered)
		},
	}, {
		name: "an admitted group restored from before its pods ended gets their counts and succeeds",
		objs: objects(admitted(3), newPod("a", ok), newPod("b", ok), newPod("c", ok), newPod("d", bad)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 3, 1)
			wantCondition(t, pg, v1alpha1.ConditionCountsRecovered, metav1.ConditionTrue, scheduling.ReasonCountedPodsMissing,
				"3 succeeded and 1 failed pods that Muster had counted for this group were missing from its status, which is older "+
					"than Muster's writes (was Muster's etcd restored from a snapshot?); the counts now include them (3 succeeded, 1 failed). "+
					"Pods counted and deleted since cannot be counted again, so the counts may be short")
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		},
	}, {
		name: "a group restored from before its admission is admitted again, and short counts are not judged Failed",
		cfg:  func(c *Config) { c.ReleaseGrace = 0 },
		// Two of its four pods were counted and deleted since the snapshot.
		objs: objects(newGroup(4), newPod("a", ok), newPod("b", ok)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 2, 0)
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonAdmittedBeforeRestore, "")
			wantTime(t, "admissionTime", pg.Status.AdmissionTime, t0)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonCountsIncomplete,
				"no active pods and 2 of 4 needed pods are known to have succeeded, 0 failed; the counts were recovered "+
					"(see CountsRecovered) and may be short, so the group is not judged Failed")
			if d := h.step(time.Hour); d != 0 {
				t.Errorf("requeue %s an hour later, want none", d)
			}
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonCountsIncomplete, "")
		},
	}, {
		name: "pods counted for an earlier group of the same name count nothing",
		cfg:  func(c *Config) { c.ReleaseGrace = 0 },
		objs: objects(admitted(2), newPod("a", countedFor(corev1.PodSucceeded, "uid-old-group")), newPod("b", failed)),
		check: func(t *testing.T, h *harness) {
			pg := h.group()
			wantCounts(t, pg, 0, 1)
			wantNoCondition(t, pg, v1alpha1.ConditionCountsRecovered)
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name: "a counted pod whose finalizer was put back is not recovered: its count goes through the uncounted lists",
		objs: objects(admitted(2, counts(1, 0)), newPod("a", ok, finalizers(scheduling.TrackingFinalizer)), newPod("b", running)),
		check: func(t *testing.T, h *harness) {
			wantNoCondition(t, h.group(), v1alpha1.ConditionCountsRecovered)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, tc.objs...)
			h.sync()
			tc.check(t, h)
		})
	}
}
