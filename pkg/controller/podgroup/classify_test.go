package podgroup

import (
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func TestClassifyPods(t *testing.T) {
	now := t0
	type counters struct{ pods, gated, active, scheduled, ready, terminating int32 }
	cases := []struct {
		name        string
		pods        []*corev1.Pod
		fastRelease bool
		want        counters
		finished    map[string]podResult
		released    []string
		gated       []string
		tracked     []string
		nextCheck   time.Time
	}{{
		name:        "no pods, nothing counted",
		fastRelease: true,
	}, {
		name:        "gated pending pods are pods, gated and active",
		pods:        pods("p", 3),
		fastRelease: true,
		want:        counters{pods: 3, gated: 3, active: 3},
		gated:       []string{"p-0", "p-1", "p-2"},
		tracked:     []string{"p-0", "p-1", "p-2"},
	}, {
		name:        "only Muster's gate makes a pod gated",
		pods:        []*corev1.Pod{newPod("other", gates("example.com/other")), newPod("both", gates("example.com/other", scheduling.AdmissionGate))},
		fastRelease: true,
		want:        counters{pods: 2, gated: 1, active: 2},
		gated:       []string{"both"},
		tracked:     []string{"other", "both"},
	}, {
		name:        "a bound pod is scheduled, and ready only with Ready=True",
		pods:        []*corev1.Pod{newPod("ready", running, ready), newPod("not-ready", running, notReady), newPod("no-condition", running)},
		fastRelease: true,
		want:        counters{pods: 3, active: 3, scheduled: 3, ready: 1},
		tracked:     []string{"ready", "not-ready", "no-condition"},
	}, {
		name:        "a bound pod that has not started is scheduled",
		pods:        []*corev1.Pod{newPod("bound", ungated, onNode("node-1"))},
		fastRelease: true,
		want:        counters{pods: 1, active: 1, scheduled: 1},
		tracked:     []string{"bound"},
	}, {
		name:        "a succeeded pod with the finalizer is finished as succeeded, not active",
		pods:        []*corev1.Pod{newPod("done", succeeded)},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1},
		finished:    map[string]podResult{"done": resultSucceeded},
		tracked:     []string{"done"},
	}, {
		name:        "a failed pod with the finalizer is finished as failed, not active",
		pods:        []*corev1.Pod{newPod("broke", failed)},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1},
		finished:    map[string]podResult{"broke": resultFailed},
		tracked:     []string{"broke"},
	}, {
		name:        "a terminal pod without the finalizer was counted already and is not finished again",
		pods:        []*corev1.Pod{newPod("done", succeeded, noFinalizer), newPod("broke", failed, noFinalizer)},
		fastRelease: true,
		want:        counters{pods: 2, scheduled: 2},
	}, {
		name:        "fast release: a deleted running pod is not active at once",
		pods:        []*corev1.Pod{newPod("leaving", running, deletedAt(now.Add(30*time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1, terminating: 1},
		tracked:     []string{"leaving"},
		nextCheck:   now.Add(30*time.Second + reportMargin),
	}, {
		name:        "without fast release a deleted running pod stays active until it is terminal",
		pods:        []*corev1.Pod{newPod("leaving", running, deletedAt(now.Add(30*time.Second)))},
		fastRelease: false,
		want:        counters{pods: 1, active: 1, scheduled: 1, terminating: 1},
		tracked:     []string{"leaving"},
		nextCheck:   now.Add(30*time.Second + reportMargin),
	}, {
		name:        "without fast release a deleted terminal pod is not active",
		pods:        []*corev1.Pod{newPod("gone", failed, deletedAt(now.Add(30*time.Second)))},
		fastRelease: false,
		want:        counters{pods: 1, scheduled: 1},
		finished:    map[string]podResult{"gone": resultFailed},
		tracked:     []string{"gone"},
	}, {
		name:        "a deleted pod that was never bound is released, not counted",
		pods:        []*corev1.Pod{newPod("never-ran", deletedAt(now.Add(30*time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1, gated: 1},
		released:    []string{"never-ran"},
		gated:       []string{"never-ran"},
		tracked:     []string{"never-ran"},
	}, {
		name:     "without fast release a deleted pod that was never released is not active: it will never run",
		pods:     []*corev1.Pod{newPod("never-ran", deletedAt(now.Add(30*time.Second)))},
		want:     counters{pods: 1, gated: 1},
		released: []string{"never-ran"},
		gated:    []string{"never-ran"},
		tracked:  []string{"never-ran"},
	}, {
		// PodGC marks an unscheduled pod being deleted Failed before it
		// removes it: it still ran nothing.
		name:        "a deleted pod that was never bound and that PodGC marked Failed is released, not counted",
		pods:        []*corev1.Pod{newPod("never-ran", ungated, failedUnbound, deletedAt(now.Add(30*time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1},
		released:    []string{"never-ran"},
		tracked:     []string{"never-ran"},
	}, {
		name:        "a deleted never-bound pod without the finalizer has nothing to release",
		pods:        []*corev1.Pod{newPod("never-ran", noFinalizer, deletedAt(now.Add(30*time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1, gated: 1},
		gated:       []string{"never-ran"},
	}, {
		name:        "a deleted running pod past its grace period and the report margin counts as failed",
		pods:        []*corev1.Pod{newPod("killed", running, deletedAt(now.Add(-time.Second-reportMargin)))},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1},
		finished:    map[string]podResult{"killed": resultFailed},
		tracked:     []string{"killed"},
	}, {
		name:        "a deleted running pod counts as failed at the very end of the report margin",
		pods:        []*corev1.Pod{newPod("killed", running, deletedAt(now.Add(-reportMargin)))},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1},
		finished:    map[string]podResult{"killed": resultFailed},
		tracked:     []string{"killed"},
	}, {
		// The deletionTimestamp is stored rounded down to the second, and
		// the kubelet reports a moment after the grace period: a pod that
		// ended Succeeded in it is still counted as such.
		name:        "a deleted running pod just past its deletionTimestamp still has time to report",
		pods:        []*corev1.Pod{newPod("exiting", running, deletedAt(now.Add(-time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1, terminating: 1},
		tracked:     []string{"exiting"},
		nextCheck:   now.Add(-time.Second + reportMargin),
	}, {
		name:        "a deleted pod that succeeded counts as succeeded",
		pods:        []*corev1.Pod{newPod("done", succeeded, deletedAt(now.Add(-time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1},
		finished:    map[string]podResult{"done": resultSucceeded},
		tracked:     []string{"done"},
	}, {
		name:        "a deleted running pod within its grace period is terminating until the report margin after it",
		pods:        []*corev1.Pod{newPod("leaving", running, deletedAt(now.Add(10*time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1, terminating: 1},
		tracked:     []string{"leaving"},
		nextCheck:   now.Add(10*time.Second + reportMargin),
	}, {
		name: "nextCheck is the soonest end of a grace period",
		pods: []*corev1.Pod{
			newPod("late", running, deletedAt(now.Add(20*time.Second))),
			newPod("soon", running, deletedAt(now.Add(5*time.Second))),
			newPod("later", running, deletedAt(now.Add(40*time.Second))),
		},
		fastRelease: true,
		want:        counters{pods: 3, scheduled: 3, terminating: 3},
		tracked:     []string{"late", "soon", "later"},
		nextCheck:   now.Add(5*time.Second + reportMargin),
	}, {
		name:        "a deleted running pod without the finalizer is neither terminating nor counted",
		pods:        []*corev1.Pod{newPod("leaving", running, noFinalizer, deletedAt(now.Add(10*time.Second)))},
		fastRelease: true,
		want:        counters{pods: 1, scheduled: 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := classifyPods(tc.pods, now, tc.fastRelease)
			got := counters{v.pods, v.gated, v.active, v.scheduled, v.ready, v.terminating}
			if got != tc.want {
				t.Errorf("counters = %+v, want %+v", got, tc.want)
			}
			wantFinished := map[types.UID]podResult{}
			for n, r := range tc.finished {
				wantFinished[types.UID("uid-"+n)] = r
			}
			if !maps.Equal(v.finished, wantFinished) {
				t.Errorf("finished = %v, want %v", v.finished, wantFinished)
			}
			if got := names(v.released); !slices.Equal(got, tc.released) {
				t.Errorf("released = %v, want %v", got, tc.released)
			}
			if got := names(v.gatedPods); !slices.Equal(got, tc.gated) {
				t.Errorf("gatedPods = %v, want %v", got, tc.gated)
			}
			var tracked []string
			for _, p := range v.withFinalizer {
				tracked = append(tracked, p.Name)
			}
			slices.Sort(tracked)
			wantTracked := slices.Sorted(slices.Values(tc.tracked))
			if !slices.Equal(tracked, wantTracked) {
				t.Errorf("withFinalizer = %v, want %v", tracked, wantTracked)
			}
			if !v.nextCheck.Equal(tc.nextCheck) {
				t.Errorf("nextCheck = %s, want %s", v.nextCheck, tc.nextCheck)
			}
		})
	}
}

func names(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
