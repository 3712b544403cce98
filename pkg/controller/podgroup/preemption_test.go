package podgroup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// markedPreemptedAt marks the group preempted, as markVictim leaves it.
func markedPreemptedAt(at time.Time) groupMod {
	return func(pg *v1alpha1.PodGroup) {
		condition(v1alpha1.ConditionPreempted, metav1.ConditionTrue, scheduling.ReasonPreemptionByMuster, at)(pg)
		condition(v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonPreemptionByMuster, at)(pg)
	}
}

func markedByMuster(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: scheduling.ReasonPreemptionByMuster,
	})
}

func markedByScheduler(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
	})
}

// TestSyncEvictsPreemptedPods: a preempted group's released pods get
// DisruptionTarget, then are deleted, each in that order; its gated pods
// stay, and wait whole.
func TestSyncEvictsPreemptedPods(t *testing.T) {
	pg := newGroup(2, admittedAt(t0.Add(-time.Hour)), scheduledAt(t0.Add(-time.Hour)), markedPreemptedAt(t0))
	h := newHarness(t, nil, objects(pg,
		newPod("r0", ungated, onNode("n"), running), newPod("r1", ungated, onNode("n"), running),
		newPod("marked", ungated, onNode("n"), running, markedByMuster), newPod("new", createdAt(t0)),
		newPod("theirs", ungated, onNode("n"), running, markedByScheduler))...)
	before, _ := testutil.GetCounterMetricValue(h.c.metrics.podsPreempted)
	h.sync()
	if after, _ := testutil.GetCounterMetricValue(h.c.metrics.podsPreempted); after-before != 3 {
		t.Errorf("muster_pods_preempted_total rose by %v, want 3", after-before)
	}
	calls := h.mutations()
	for _, name := range []string{"r0", "r1"} {
		status, del := slices.Index(calls, "patch pods/status "+name), slices.Index(calls, "delete pods "+name)
		if status < 0 || del < 0 || status > del {
			t.Errorf("calls %q: want pods/status patched, then the pod deleted, for %s", calls, name)
		}
	}
	if slices.Contains(calls, "patch pods/status marked") || !slices.Contains(calls, "delete pods marked") {
		t.Errorf("calls %q: a pod marked already is deleted without a second mark", calls)
	}
	if slices.Contains(calls, "patch pods/status theirs") || slices.Contains(calls, "delete pods theirs") {
		t.Errorf("calls %q: a pod kube-scheduler preempts first is left to it", calls)
	}
	for _, c := range calls {
		if strings.HasSuffix(c, " new") && strings.HasPrefix(c, "delete") {
			t.Errorf("the gated pod was deleted: %q", calls)
		}
	}
	for _, a := range h.kube.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || p.GetSubresource() != "status" {
			continue
		}
		if body := string(p.GetPatch()); !strings.Contains(body, `"type":"DisruptionTarget"`) || !strings.Contains(body, `"reason":"PreemptionByMuster"`) ||
			!strings.Contains(body, `"uid":"uid-`+p.GetName()+`"`) {
			t.Errorf("status patch of %s = %s, want DisruptionTarget/PreemptionByMuster and the pod's UID", p.GetName(), body)
		}
	}
	if c := meta.FindStatusCondition(h.group().Status.Conditions, v1alpha1.ConditionAdmitted); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Admitted = %+v: a preempted group is not admitted while its released pods are evicted", c)
	}
}

// TestSyncCountsPreemptedPods: a pod preempted, by Muster or by
// kube-scheduler, counts in failed and in preempted, once, through the
// uncounted list; a pod that crashed counts in failed only.
func TestSyncCountsPreemptedPods(t *testing.T) {
	pg := admitted(3)
	h := newHarness(t, func(c *Config) { c.StatusBatchPeriod = 0 }, objects(pg,
		newPod("evicted", ungated, onNode("n"), failed, markedByMuster), newPod("crashed", ungated, onNode("n"), failed),
		newPod("theirs", ungated, onNode("n"), failed, markedByScheduler))...)
	h.sync()
	writes := h.statusWrites()
	if len(writes) < 2 {
		t.Fatalf("%d status writes, want the record and the count", len(writes))
	}
	u := writes[0].Status.UncountedTerminatedPods
	if u == nil || !slices.Equal(slices.Sorted(slices.Values(u.Preempted)), uids("evicted", "theirs")) || len(u.Failed) != 3 {
		t.Fatalf("first write's uncounted = %+v, want all three failed and evicted and theirs preempted", u)
	}
	last := writes[len(writes)-1].Status
	if last.Failed != 3 || last.Preempted != 2 || last.UncountedTerminatedPods != nil {
		t.Errorf("counts failed %d preempted %d uncounted %+v, want 3, 2 and none", last.Failed, last.Preempted, last.UncountedTerminatedPods)
	}
	h.observe()
	h.sync()
	if g := h.group().Status; g.Failed != 3 || g.Preempted != 2 {
		t.Errorf("after a second sync: failed %d preempted %d, want 3 and 2: each pod is counted once", g.Failed, g.Preempted)
	}
}

// TestSyncMarksVictims: the preemptor's recorded preemption marks each
// victim group once; a victim replaced by a new group of its name, or
// admitted again since the decision, is left alone.
func TestSyncMarksVictims(t *testing.T) {
	victim := func(mods ...groupMod) *v1alpha1.PodGroup {
		v := admitted(2)
		v.Name, v.UID = "low", "uid-low"
		v.Status.Placements = []v1alpha1.PodPlacement{{Pod: "x", UID: "ux", Node: "n"}}
		for _, m := range mods {
			m(v)
		}
		return v
	}
	inOther := func(pg *v1alpha1.PodGroup) { pg.Namespace = otherNS }
	tests := []struct {
		name     string
		victim   *v1alpha1.PodGroup
		wantMark bool
		// wantWhy is what the victim's Preempted message says of the
		// preemptor; notWant, what it must not.
		wantWhy, notWant string
	}{
		{"an admitted victim is marked, naming the preemptor", victim(), true, "PodGroup pg (priority 100", ""},
		{"a new group of the victim's name is not", victim(func(pg *v1alpha1.PodGroup) { pg.UID = "uid-other" }), false, "", ""},
		{"a victim admitted again since the decision is not", victim(admittedAt(t0.Add(time.Minute))), false, "", ""},
		{"a finished victim is not", victim(finishedAt(v1alpha1.ReasonSucceeded, t0)), false, "", ""},
		{"a victim in another namespace, recorded by ref, is marked without the preemptor's names", victim(inOther), true,
			"a PodGroup in another namespace (priority 100, above its 0)", testNS + "/"},
		{"a new group of the name of a victim recorded by ref is not", victim(inOther, func(pg *v1alpha1.PodGroup) { pg.UID = "uid-other" }), false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pre := newGroup(2, condition(v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonPreempting, t0))
			recorded := v1alpha1.PreemptionVictim{Kind: scheduling.VictimKindPodGroup, Namespace: testNS, Name: "low", UID: "uid-low", Priority: 0, Pods: 2}
			if tc.victim.Namespace != testNS {
				// As capacity admission records a victim in another
				// namespace: by ref alone.
				recorded = v1alpha1.PreemptionVictim{Kind: scheduling.VictimKindPodGroup, Ref: scheduling.VictimRef("uid-low"), Priority: 0, Pods: 2}
			}
			pre.Status.Preemption = &v1alpha1.PodGroupPreemption{Time: metav1.NewTime(t0), Priority: 100, Victims: []v1alpha1.PreemptionVictim{recorded}}
			other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS, Labels: map[string]string{corev1.LabelMetadataName: otherNS}}}
			h := newHarness(t, func(c *Config) { c.Admission = AdmissionCapacity }, pre, tc.victim, other, newPod("p0"), newPod("p1"))
			h.sync()
			got, err := h.muster.SchedulingV1alpha1().PodGroups(tc.victim.Namespace).Get(t.Context(), "low", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			marked := meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionPreempted)
			if marked != tc.wantMark {
				t.Fatalf("victim Preempted=%v, want %v", marked, tc.wantMark)
			}
			if !tc.wantMark {
				return
			}
			if isAdmitted(got) || got.Status.Placements != nil {
				t.Errorf("marked victim: admitted %v, placements %v; want neither", isAdmitted(got), got.Status.Placements)
			}
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPreempted)
			if !strings.Contains(c.Message, tc.wantWhy) {
				t.Errorf("Preempted message %q, want it to say %q", c.Message, tc.wantWhy)
			}
			if tc.notWant != "" && strings.Contains(c.Message, tc.notWant) {
				t.Errorf("Preempted message %q names the preemptor's namespace (%q) to a victim in another", c.Message, tc.notWant)
			}
			h.reset()
			h.observe()
			h.sync()
			for _, c := range h.mutations() {
				if c == "update podgroups/status low" {
					t.Errorf("the victim was marked a second time: %q", h.mutations())
				}
			}
		})
	}
}

// TestEvictedWhilePreempted: a pod deleted while its group was preempted
// counts as preempted whoever wrote its DisruptionTarget last (before 1.31,
// kube-scheduler rewrites it); one deleted before or after does not.
func TestEvictedWhilePreempted(t *testing.T) {
	byScheduler := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
		})
	}
	deletedWithGrace := func(requested time.Time) podMod {
		return func(p *corev1.Pod) {
			p.DeletionGracePeriodSeconds = ptr.To(int64(30))
			at := metav1.NewTime(requested.Add(30 * time.Second))
			p.DeletionTimestamp = &at
		}
	}
	marked := t0
	tests := []struct {
		name  string
		group *v1alpha1.PodGroup
		pod   *corev1.Pod
		want  bool
	}{
		{"deleted while preempted, rewritten by the scheduler", newGroup(2, markedPreemptedAt(marked)),
			newPod("p", failed, byScheduler, deletedWithGrace(marked.Add(time.Second))), true},
		{"deleted in the second of the marking", newGroup(2, markedPreemptedAt(marked.Add(500*time.Millisecond))),
			newPod("p", failed, byScheduler, deletedWithGrace(marked)), true},
		{"deleted before the group was preempted", newGroup(2, markedPreemptedAt(marked)),
			newPod("p", failed, byScheduler, deletedWithGrace(marked.Add(-time.Minute))), false},
		{"deleted after the group was admitted again", newGroup(2,
			condition(v1alpha1.ConditionPreempted, metav1.ConditionFalse, scheduling.ReasonReadmitted, marked.Add(time.Minute))),
			newPod("p", failed, byScheduler, deletedWithGrace(marked.Add(2*time.Minute))), false},
		{"deleted while preempted, with no DisruptionTarget", newGroup(2, markedPreemptedAt(marked)),
			newPod("p", failed, deletedWithGrace(marked.Add(time.Second))), false},
		{"a group never preempted", newGroup(2), newPod("p", failed, byScheduler, deletedWithGrace(marked)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := evictedWhilePreempted(tc.group, tc.pod); got != tc.want {
				t.Errorf("evictedWhilePreempted = %v, want %v", got, tc.want)
			}
		})
	}
}
