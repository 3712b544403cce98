package e2e

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestPreemptionJobGangs: a low-priority Job gang fills the cluster and
// runs; a high-priority Job gang arrives and preempts it. Muster records
// the decision on the preemptor, marks the victim group, then marks and
// deletes each of its pods; the preemptor runs whole. The low Job's
// replacement pods wait whole behind the gate until the high gang has
// ended, then run whole, and the Job completes: its podFailurePolicy
// ignored the evicted pods, which carried DisruptionTarget. The low group
// counts each evicted pod once, in failed and in preempted. Neither gang
// ever runs short.
func TestPreemptionJobGangs(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 2, "32", nil) // room for 4 pods of 15 CPU.
	low := priorityClass(t, ctx, ns+"-low", 100)
	high := priorityClass(t, ctx, ns+"-high", 1000)
	w := watchPreemption(t, ctx, ns)

	createPreemptibleJob(t, ctx, preemptibleJob(ns, "low", low, jobOpts{pods: 4, cpu: "15", runFor: "20s"}))
	evicted := w.expectRunning(t, ctx, "low", 4, nil)
	createPreemptibleJob(t, ctx, preemptibleJob(ns, "high", high, jobOpts{pods: 4, cpu: "15", runFor: "30s"}))

	decided := w.waitPreemption(t, ctx, "high")
	if c := decided.admitted; c == nil || c.Status != metav1.ConditionFalse || c.Reason != scheduling.ReasonPreempting {
		t.Errorf("the preemptor recorded its preemption with Admitted %+v, want False/%s", c, scheduling.ReasonPreempting)
	}
	expectVictims(t, ctx, ns, decided.preemption, 1000, map[string]v1alpha1.PreemptionVictim{"low": {Priority: 100, Pods: 4}})
	marked := w.waitPreempted(t, ctx, "low")
	expectMarkedVictim(t, marked, decided, "high")

	w.expectEvicted(t, ctx, "low", evicted)
	w.expectRunning(t, ctx, "high", 4, nil)
	expectAdmittedWithoutPreemption(t, w, "high")
	expectEvent(t, ctx, ns, "high", scheduling.EventPreempting)
	expectEvent(t, ctx, ns, "low", scheduling.EventPreempted)

	// The low Job's replacements (after the Job's 10s backoff) wait, all
	// gated, while the high gang runs.
	old := uids(evicted)
	sawWaiting := false
	w.poll(t, ctx, "the high gang to end", func() bool {
		highEnded := true
		for _, p := range groupPods(t, ctx, ns, "high") {
			highEnded = highEnded && scheduling.IsTerminal(&p)
		}
		gated, replacements := 0, 0
		for _, p := range groupPods(t, ctx, ns, "low") {
			if old[p.UID] || p.DeletionTimestamp != nil {
				continue
			}
			replacements++
			if scheduling.HasGate(&p) {
				gated++
			} else if !highEnded {
				t.Fatalf("replacement pod %s of the preempted gang was released while the high gang still runs: %s", p.Name, groupState(ns, "low"))
			}
		}
		sawWaiting = sawWaiting || (replacements == 4 && gated == 4)
		return highEnded
	})
	if !sawWaiting {
		t.Fatal("the high gang ended before the low Job's 4 replacement pods were seen waiting gated: the test proves nothing")
	}
	w.expectRunning(t, ctx, "low", 4, old)
	waitCondition(t, ctx, ns, "low", v1alpha1.ConditionPreempted, metav1.ConditionFalse, scheduling.ReasonReadmitted)

	waitJobCondition(t, ctx, ns, "low", batchv1.JobComplete)
	waitGroupFinished(t, ctx, ns, "low")
	pg := waitCounted(t, ctx, ns, "low")
	expectGroupCounts(t, pg, v1alpha1.ReasonSucceeded, 4, 4)
	if pg.Status.Preempted != 4 {
		t.Errorf("group low counts %d preempted, want its 4 evicted pods", pg.Status.Preempted)
	}
	w.check(t)
	expectNoFinalizers(t, ctx, ns)
}

// TestPreemptionTakesOneOfTwo: two low-priority gangs run; a high-priority
// gang needs the room of one of them. Exactly that one is preempted, the
// one the rules pick among equals in number (the lower priority, then the
// more recently admitted), and the preemptor's status.preemption names
// only it; the other keeps running, untouched.
func TestPreemptionTakesOneOfTwo(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second int32 // priorities of the gang admitted first and of the one admitted second
		victim, other string
	}{
		{name: "the lower priority", first: 100, second: 200, victim: "first", other: "second"},
		{name: "the more recently admitted at equal priority", first: 100, second: 100, victim: "second", other: "first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t, 3*time.Minute)
			ns := namespace(t, ctx)
			poolNodes(t, ctx, ns, 4, "32", nil) // one pod of 30 CPU per node.
			classes := map[int32]string{}
			for _, v := range []int32{tc.first, tc.second, 1000} {
				if classes[v] == "" {
					classes[v] = priorityClass(t, ctx, fmt.Sprintf("%s-%d", ns, v), v)
				}
			}
			w := watchPreemption(t, ctx, ns)

			running := map[string][]corev1.Pod{}
			createPreemptibleJob(t, ctx, preemptibleJob(ns, "first", classes[tc.first], jobOpts{pods: 2, cpu: "30", runFor: "10m"}))
			running["first"] = w.expectRunning(t, ctx, "first", 2, nil)
			// Admission times are stored to the second: let the clock pass
			// the first gang's, so that the second is admitted later.
			first, err := getGroup(ctx, ns, "first")
			if err != nil || first.Status.AdmissionTime == nil {
				t.Fatalf("the running gang first has no admission time: %v", err)
			}
			w.poll(t, ctx, "the clock to pass the first gang's admission second", func() bool {
				return time.Now().Truncate(time.Second).After(first.Status.AdmissionTime.Time)
			})
			createPreemptibleJob(t, ctx, preemptibleJob(ns, "second", classes[tc.second], jobOpts{pods: 2, cpu: "30", runFor: "10m"}))
			running["second"] = w.expectRunning(t, ctx, "second", 2, nil)

			createPreemptibleJob(t, ctx, preemptibleJob(ns, "high", classes[1000], jobOpts{pods: 2, cpu: "30", runFor: "10m"}))
			decided := w.waitPreemption(t, ctx, "high")
			wantPriority := map[string]int32{"first": tc.first, "second": tc.second}[tc.victim]
			expectVictims(t, ctx, ns, decided.preemption, 1000, map[string]v1alpha1.PreemptionVictim{tc.victim: {Priority: wantPriority, Pods: 2}})
			expectMarkedVictim(t, w.waitPreempted(t, ctx, tc.victim), decided, "high")
			w.expectEvicted(t, ctx, tc.victim, running[tc.victim])
			w.expectRunning(t, ctx, "high", 2, nil)
			expectAdmittedWithoutPreemption(t, w, "high")
			w.expectUntouched(t, ctx, tc.other, running[tc.other])
			w.check(t)
		})
	}
}

// TestPreemptionLeaderKilledMidway: Muster decides a preemption, but a
// policy refuses its evictions, and it is killed before any happens. The
// new leader finishes the same preemption: the recorded decision (time and
// victims) stays as it was until the preemptor is admitted, the same
// victim is evicted and counted once, the other candidate is untouched,
// and the preemptor runs whole. With the pods' status refused too, the
// victim's pods are untouched at the crash; without, they already carry
// DisruptionTarget.
func TestPreemptionLeaderKilledMidway(t *testing.T) {
	for _, tc := range []struct {
		name string
		// denyStatus refuses Muster's writes to pods/status as well as its
		// deletes.
		denyStatus bool
	}{
		{name: "before the pods are marked", denyStatus: true},
		{name: "after the pods are marked", denyStatus: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t, 4*time.Minute)
			ns := namespace(t, ctx)
			poolNodes(t, ctx, ns, 4, "32", nil) // one pod of 30 CPU per node.
			low := priorityClass(t, ctx, ns+"-low", 100)
			high := priorityClass(t, ctx, ns+"-high", 1000)
			w := watchPreemption(t, ctx, ns)

			// Two candidates: a new leader that started a preemption of its
			// own, instead of finishing the recorded one, would find the
			// marked victim no longer admitted and take the other.
			running := map[string][]corev1.Pod{}
			for _, g := range []string{"a", "b"} {
				createPreemptibleJob(t, ctx, preemptibleJob(ns, g, low, jobOpts{pods: 2, cpu: "30", runFor: "10m"}))
				running[g] = w.expectRunning(t, ctx, g, 2, nil)
			}
			allow := denyMusterEvictions(t, ctx, ns, tc.denyStatus)
			createPreemptibleJob(t, ctx, preemptibleJob(ns, "high", high, jobOpts{pods: 2, cpu: "30", runFor: "10m"}))

			decided := w.waitPreemption(t, ctx, "high")
			if len(decided.preemption.Victims) != 1 {
				t.Fatalf("status.preemption names %d victims %+v, want 1", len(decided.preemption.Victims), decided.preemption.Victims)
			}
			victim := decided.preemption.Victims[0].Name
			other := map[string]string{"a": "b", "b": "a"}[victim]
			expectVictims(t, ctx, ns, decided.preemption, 1000, map[string]v1alpha1.PreemptionVictim{victim: {Priority: 100, Pods: 2}})
			expectMarkedVictim(t, w.waitPreempted(t, ctx, victim), decided, "high")
			if !tc.denyStatus {
				w.poll(t, ctx, "the victim's pods to carry DisruptionTarget", func() bool {
					for _, p := range running[victim] {
						if w.pod(p.UID).disruption == "" {
							return false
						}
					}
					return true
				})
			}
			for _, p := range running[victim] {
				if r := w.pod(p.UID); r.deleting || (tc.denyStatus && r.disruption != "") {
					t.Fatalf("pod %s was marked (%q) or deleted (%t) although the policy refuses it: the test proves nothing", p.Name, r.disruption, r.deleting)
				}
			}

			// A namespace that kube-controller-manager deletes while Muster
			// is down fails on the aggregated API's stale discovery, and its
			// retries back off for many minutes: let earlier tests' go first.
			waitNamespacesDeleted(t, ctx)
			t.Logf("killing muster-apiserver with preemption %+v recorded", decided.preemption)
			env.KillMuster()
			allow()
			if err := env.RestartMuster(ctx); err != nil {
				t.Fatal(err)
			}

			w.expectEvicted(t, ctx, victim, running[victim])
			w.expectRunning(t, ctx, "high", 2, nil)
			expectAdmittedWithoutPreemption(t, w, "high")
			for _, v := range w.history("high") {
				if v.preemption != nil && !samePreemption(v.preemption, decided.preemption) {
					t.Errorf("the preemption recorded before the crash %+v became %+v", decided.preemption, v.preemption)
				}
			}
			w.expectUntouched(t, ctx, other, running[other])
			w.check(t)
		})
	}
}

// expectMarkedVictim asserts how a victim group was marked: Preempted=True
// and Admitted=False, both of reason PreemptionByMuster, the message naming
// the preemptor, and only after the preemptor recorded its decision.
func expectMarkedVictim(t *testing.T, marked, decided groupVersion, preemptor string) {
	t.Helper()
	if c := marked.preempted; c.Reason != scheduling.ReasonPreemptionByMuster || !strings.Contains(c.Message, preemptor) {
		t.Errorf("victim Preempted=True with reason %q and message %q, want %s naming %s", c.Reason, c.Message, scheduling.ReasonPreemptionByMuster, preemptor)
	}
	if c := marked.admitted; c == nil || c.Status != metav1.ConditionFalse || c.Reason != scheduling.ReasonPreemptionByMuster {
		t.Errorf("victim marked Preempted with Admitted %+v, want False/%s", c, scheduling.ReasonPreemptionByMuster)
	}
	if marked.seq < decided.seq {
		t.Errorf("the victim was marked before the preemptor recorded its decision")
	}
}

// expectAdmittedWithoutPreemption asserts that the preemptor was admitted
// in a write that cleared status.preemption.
func expectAdmittedWithoutPreemption(t *testing.T, w *preemptionWatch, group string) {
	t.Helper()
	admitted := false
	for _, v := range w.history(group) {
		if v.admitted != nil && v.admitted.Status == metav1.ConditionTrue {
			admitted = true
			if v.preemption != nil {
				t.Errorf("gang %s is Admitted with status.preemption still set: %+v", group, v.preemption)
				return
			}
		}
	}
	if !admitted {
		t.Errorf("gang %s runs but the watch never saw it Admitted", group)
	}
}

// samePreemption reports whether two records of a preemption agree on its
// time, priority and victims.
func samePreemption(a, b *v1alpha1.PodGroupPreemption) bool {
	return a.Time.Equal(&b.Time) && a.Priority == b.Priority && reflect.DeepEqual(a.Victims, b.Victims)
}
