package podgroup

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const waitingForTrain = "no active pods and 0 of 2 needed pods succeeded; waiting for Job train, which still runs, to replace its pods"

// TestSyncFinishWaitsForARunningJob checks step 12's rule for groups whose
// pods a Job controls: no Failed while the Job runs, whatever the release
// grace; the usual rule once it has ended or is gone.
func TestSyncFinishWaitsForARunningJob(t *testing.T) {
	failedPods := func(mods ...podMod) []*corev1.Pod {
		return []*corev1.Pod{newPod("train-a", append([]podMod{failed}, mods...)...), newPod("train-b", append([]podMod{failed}, mods...)...)}
	}
	withJob := func(j *batchv1.Job, pg *v1alpha1.PodGroup, ps ...*corev1.Pod) []runtime.Object {
		return append(objects(pg, ps...), j)
	}
	// replacement is a pod the Job creates after the group was admitted.
	replacement := func(name string, at time.Time) *corev1.Pod { return newPod(name, ofJob("train"), createdAt(at)) }
	cases := []struct {
		name    string
		objs    []runtime.Object
		requeue time.Duration
		check   func(t *testing.T, h *harness)
	}{{
		name: "a group whose Job still runs keeps waiting past the release grace, and no timer is set",
		objs: withJob(newJob("train"), admitted(2), failedPods(ofJob("train"))...),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement, waitingForTrain)
			if d := h.step(time.Hour); d != 0 {
				t.Errorf("requeue = %s while the Job runs, want none: its events requeue the group", d)
			}
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement, waitingForTrain)
			if pg.Status.CompletionTime != nil {
				t.Errorf("completionTime = %v while the Job runs", pg.Status.CompletionTime)
			}
			if got := h.mutations(); len(got) != 0 {
				t.Errorf("writes while waiting: %v", got)
			}
		},
	}, {
		name: "a suspended Job still runs: its group waits, and the pods it makes on resuming are released together",
		objs: withJob(newJob("train", batchv1.JobSuspended), admitted(2), failedPods(ofJob("train"))...),
		check: func(t *testing.T, h *harness) {
			h.step(time.Hour)
			h.addPod(replacement("train-c", t0.Add(time.Hour)))
			h.step(time.Second)
			if g := gateNames(h.pod("train-c")); len(g) != 1 {
				t.Errorf("train-c gates = %v, want held: with it the gang has 1 of 2", g)
			}
			h.addPod(replacement("train-d", t0.Add(time.Hour)))
			h.step(time.Second)
			for _, n := range []string{"train-c", "train-d"} {
				if g := gateNames(h.pod(n)); g != nil {
					t.Errorf("%s still gated: %v", n, g)
				}
			}
			wantNoCondition(t, h.group(), v1alpha1.ConditionFinished)
		},
	}, {
		name: "a suspended Job deleted every pod: the group it owns (as the controller makes it) still waits for it, past the grace",
		objs: withJob(newJob("train", batchv1.JobSuspended), groupOwnedBy(admitted(2), newJob("train"), 2)),
		check: func(t *testing.T, h *harness) {
			h.step(time.Hour)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement, waitingForTrain)
		},
	}, {
		name:    "a group owned by a Job that ended, with no pod left, fails after the grace as before",
		objs:    withJob(newJob("train", batchv1.JobFailed), groupOwnedBy(admitted(2), newJob("train"), 2)),
		requeue: 30 * time.Second,
		check: func(t *testing.T, h *harness) {
			h.step(30 * time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name: "a Job that failed ends the wait: the group, waiting longer than the grace, fails at once",
		objs: withJob(newJob("train"), admitted(2), failedPods(ofJob("train"))...),
		check: func(t *testing.T, h *harness) {
			h.step(time.Hour)
			h.setJob(newJob("train", batchv1.JobFailed))
			h.step(time.Second)
			pg := h.group()
			wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed,
				"only 0 of 2 needed pods succeeded and no replacement appeared within 30s; 2 failed")
			wantTime(t, "completionTime", pg.Status.CompletionTime, t0.Add(time.Hour+time.Second))
		},
	}, {
		name: "a Job that completed ends the wait too",
		objs: withJob(newJob("train"), admitted(2), failedPods(ofJob("train"))...),
		check: func(t *testing.T, h *harness) {
			h.step(time.Hour)
			h.setJob(newJob("train", batchv1.JobComplete))
			h.step(time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name: "a Job that ends within the grace leaves the rest of the grace, counted from the start of the wait",
		objs: withJob(newJob("train"), admitted(2), failedPods(ofJob("train"))...),
		check: func(t *testing.T, h *harness) {
			h.step(10 * time.Second)
			h.setJob(newJob("train", batchv1.JobFailed))
			// The new message is a refresh: it waits one batch period.
			if d := h.step(time.Second); d != time.Second {
				t.Errorf("requeue = %s, want the batch period", d)
			}
			if d := h.step(time.Second); d != 18*time.Second {
				t.Errorf("requeue = %s, want the 18s left of the grace", d)
			}
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement,
				"no active pods and 0 of 2 needed pods succeeded; failing in 30s unless a replacement pod appears")
			if c := cond(h.group(), v1alpha1.ConditionFinished); c != nil && !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("waiting since %s, want %s: the wait began when the group had no active pod", c.LastTransitionTime, t0)
			}
			h.step(18 * time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name: "a Job that is gone ends the wait",
		objs: withJob(newJob("train"), admitted(2), failedPods(ofJob("train"))...),
		check: func(t *testing.T, h *harness) {
			h.step(time.Hour)
			h.deleteJob("train")
			h.step(time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name:    "a Job of the same name but another UID is not the pods' Job: the usual grace",
		objs:    withJob(func() *batchv1.Job { j := newJob("train"); j.UID = "uid-other"; return j }(), admitted(2), failedPods(ofJob("train"))...),
		requeue: 30 * time.Second,
		check: func(t *testing.T, h *harness) {
			h.step(30 * time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name:    "pods without a Job: unchanged, Failed after the grace",
		objs:    objects(admitted(2), failedPods()...),
		requeue: 30 * time.Second,
		check: func(t *testing.T, h *harness) {
			h.step(30 * time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name:    "pods of a StatefulSet, not a Job: unchanged, Failed after the grace",
		objs:    append(objects(admitted(2), failedPods(ofStatefulSet("web"))...), newStatefulSet("web", "")),
		requeue: 30 * time.Second,
		check: func(t *testing.T, h *harness) {
			h.step(30 * time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonFailed, "")
		},
	}, {
		name: "one Job ended and another runs (a JobSet's Jobs): the group waits for the one that runs",
		objs: []runtime.Object{
			newJob("train"), newJob("eval", batchv1.JobComplete), admitted(2),
			newPod("eval-a", failed, ofJob("eval")), newPod("train-a", failed, ofJob("train")),
		},
		check: func(t *testing.T, h *harness) {
			h.step(time.Hour)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement, waitingForTrain)
		},
	}, {
		name: "partial success: the Job's single replacement, made after the grace would have run out, is released, and the group succeeds",
		objs: withJob(newJob("train"), admitted(2), newPod("train-a", succeeded, ofJob("train")), newPod("train-b", failed, ofJob("train"))),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionFalse, scheduling.ReasonWaitingForReplacement,
				"no active pods and 1 of 2 needed pods succeeded; waiting for Job train, which still runs, to replace its pods")
			h.step(time.Minute)
			h.addPod(replacement("train-c", t0.Add(time.Minute)))
			h.step(time.Second)
			if g := gateNames(h.pod("train-c")); g != nil {
				t.Fatalf("train-c still gated: %v; with the pod that succeeded the gang has 2 of 2", g)
			}
			wantNoCondition(t, h.group(), v1alpha1.ConditionFinished)
			p := h.pod("train-c")
			succeeded(p)
			h.setPod(p)
			h.step(time.Second)
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "2 pods succeeded (2 needed), 1 failed")
		},
	}, {
		name: "a group that succeeded is unchanged by a Job that runs",
		objs: withJob(newJob("train"), admitted(2), newPod("train-a", succeeded, ofJob("train")), newPod("train-b", succeeded, ofJob("train"))),
		check: func(t *testing.T, h *harness) {
			wantCondition(t, h.group(), v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.objs...)
			if d := h.sync(); d != tc.requeue {
				t.Errorf("requeue after %s, want %s", d, tc.requeue)
			}
			tc.check(t, h)
		})
	}
}

// groupOwnedBy makes job an owner of the group, as the controller does for a
// group it creates from the Job's pods, and records failed pods already
// counted (their pods are gone).
func groupOwnedBy(pg *v1alpha1.PodGroup, job *batchv1.Job, failed int32) *v1alpha1.PodGroup {
	pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID}}
	pg.Status.Failed = failed
	return pg
}
