package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// The priorities of the unmanaged-pod scenes: the gang preempts at
// gangPriority; the unmanaged pods are below it (lowPriority,
// midPriority), equal to it, or above it (higherPriority).
const (
	lowPriority    = 100
	midPriority    = 500
	gangPriority   = 1000
	higherPriority = 2000
)

// TestPreemptionUnmanaged: with --preempt-unmanaged, pods Muster does not
// manage fill two nodes of 4 CPU, one CPU each: a Job "low" of three pods
// (priority 100), a ReplicaSet "mid" of three (priority 500), a pod "equal"
// of the gang's priority (1000) and a pod "higher" (2000). A gang of two
// pods of one CPU at priority 1000 arrives. Muster preempts exactly two
// pods, each a victim of its own, of the lowest priority: two of the Job's.
// It records them in the gang's status.preemption, then each gets
// DisruptionTarget/PreemptionByMuster before it is deleted, and a Preempted
// event. The gang runs whole, never short, and is admitted in a write that
// clears status.preemption; its Preempting event names both victims. The
// Job's third pod, the ReplicaSet's pods and the pods of equal and higher
// priority are never touched. The flag needs a Muster started with it, so
// the test has a cluster of its own, of one small node beside the two.
func TestPreemptionUnmanaged(t *testing.T) {
	useCluster(t, clusterOfItsOwn(t, func(o *cluster.Options) {
		o.Nodes, o.NodeCPU = 1, "1"
		o.MusterArgs = append(slices.Clone(musterArgs), "--preempt-unmanaged")
	}))
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	w := watchPreemption(t, ctx, ns)
	s := fillWithUnmanaged(t, ctx, ns)

	createGang(t, ctx, ns, "gang", 2, "1", "", withPriorityClass(s.gangClass))
	decided := w.waitPreemption(t, ctx, "gang")
	if c := decided.admitted; c == nil || c.Status != metav1.ConditionFalse || c.Reason != scheduling.ReasonPreempting {
		t.Errorf("the gang recorded its preemption with Admitted %+v, want False/%s", c, scheduling.ReasonPreempting)
	}
	victims := expectPodVictims(t, decided.preemption, ns, s.pods["low"], 2)

	w.expectRunning(t, ctx, "gang", 2, nil)
	expectAdmittedWithoutPreemption(t, w, "gang")
	// One decision: no second preemption while the victims were going.
	for _, v := range w.history("gang") {
		if v.preemption != nil && !samePreemption(v.preemption, decided.preemption) {
			t.Errorf("the gang recorded a second preemption %+v after %+v", v.preemption, decided.preemption)
		}
	}
	w.poll(t, ctx, "the 2 victim pods to be gone", func() bool {
		for _, p := range victims {
			if !w.pod(p.UID).gone {
				return false
			}
		}
		return true
	})
	for _, p := range victims {
		r := w.pod(p.UID)
		// Both are in one namespace: the preemptor is named, by name.
		if r.disruption != scheduling.ReasonPreemptionByMuster || !strings.Contains(r.disruptionMessage, "PodGroup gang (priority 1000") {
			t.Errorf("victim pod %s had DisruptionTarget %q %q, want %s naming PodGroup gang",
				p.Name, r.disruption, r.disruptionMessage, scheduling.ReasonPreemptionByMuster)
		}
		if !r.markedFirst {
			t.Errorf("victim pod %s was deleted before it carried DisruptionTarget", p.Name)
		}
	}

	// Events: Preempting on the gang, naming each victim; Preempted on each
	// victim pod, and on no other object.
	preempting := waitEvents(t, ctx, ns, "gang", scheduling.EventPreempting)
	for _, p := range victims {
		if name := scheduling.VictimKindPod + " " + p.Name + " ("; !strings.Contains(preempting[0].Message, name) {
			t.Errorf("the Preempting event %q does not name %s", preempting[0].Message, name)
		}
		waitEvents(t, ctx, ns, p.Name, scheduling.EventPreempted)
	}
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + scheduling.EventPreempted})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if !slices.ContainsFunc(victims, func(p corev1.Pod) bool { return p.UID == e.InvolvedObject.UID }) {
			t.Errorf("a Preempted event on %s %s, which is no victim: %q", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}

	// Every other unmanaged pod was left alone: the Job's third pod, which
	// is of the lowest priority but not needed, the ReplicaSet's of a
	// priority above the victims', and those of equal and higher priority,
	// which preemption may never take.
	chosen := uids(victims)
	var spared []corev1.Pod
	for _, kind := range []string{"low", "mid", "equal", "higher"} {
		for _, p := range s.pods[kind] {
			if !chosen[p.UID] {
				spared = append(spared, p)
			}
		}
	}
	w.expectPodsUntouched(t, ctx, spared)
	w.check(t)
	t.Logf("at the end: %s", w.describe())
}

// TestPreemptionUnmanagedOff: without --preempt-unmanaged (the suite's
// cluster runs without it), the scene of TestPreemptionUnmanaged leaves
// the unmanaged pods alone: the gang waits, gated, Admitted=False with
// reason InsufficientCapacity and a message that preemption cannot help,
// since nothing of lower priority that Muster may take holds capacity.
func TestPreemptionUnmanagedOff(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	// An admitted gang of an earlier test whose namespace is still being
	// deleted would be a candidate victim, and change the message.
	waitNamespacesDeleted(t, ctx)
	ns := namespace(t, ctx)
	w := watchPreemption(t, ctx, ns)
	s := fillWithUnmanaged(t, ctx, ns)

	createGang(t, ctx, ns, "gang", 2, "1", "", withPriorityClass(s.gangClass))
	pg := waitAdmitted(t, ctx, ns, "gang", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)
	const cannot = "; preemption cannot help: nothing of lower priority holds capacity"
	if msg := admittedCondition(pg).Message; !strings.HasSuffix(msg, cannot) {
		t.Errorf("the waiting gang's Admitted message is %q, want it to end %q", msg, cannot)
	}

	// The cycle that wrote the message found no victim; later ones, as
	// pods come and go, must find none either.
	deadline := time.Now().Add(5 * time.Second)
	w.poll(t, ctx, "5s of the gang waiting", func() bool { return time.Now().After(deadline) })
	for _, p := range groupPods(t, ctx, ns, "gang") {
		if !scheduling.HasGate(&p) {
			t.Errorf("gang pod %s was released: %s", p.Name, groupState(ns, "gang"))
		}
	}
	for _, v := range w.history("gang") {
		if v.preemption != nil {
			t.Errorf("the gang recorded a preemption: %+v", v.preemption)
		}
	}
	var all []corev1.Pod
	for _, pods := range s.pods {
		all = append(all, pods...)
	}
	w.expectPodsUntouched(t, ctx, all)
	w.check(t)
}

// unmanagedScene is what fillWithUnmanaged made: the gang's PriorityClass
// and the running unmanaged pods, by kind (low, mid, equal, higher).
type unmanagedScene struct {
	gangClass string
	pods      map[string][]corev1.Pod
}

// fillWithUnmanaged adds two pool nodes of 4 CPU and fills them with pods
// of one CPU that Muster does not manage (no pod-group label): a Job "low"
// of 3 pods at lowPriority, a ReplicaSet "mid" of 3 at midPriority, a pod
// "equal" at gangPriority and a pod "higher" at higherPriority; it waits
// until all 8 run. PriorityClasses are named after the namespace.
func fillWithUnmanaged(t *testing.T, ctx context.Context, ns string) unmanagedScene {
	t.Helper()
	poolNodes(t, ctx, ns, 2, "4", nil)
	priorities := map[string]int32{"low": lowPriority, "mid": midPriority, "equal": gangPriority, "higher": higherPriority}
	classes := map[string]string{}
	for kind, value := range priorities {
		classes[kind] = priorityClass(t, ctx, fmt.Sprintf("%s-%d", ns, value), value)
	}
	template := func(kind string) corev1.PodTemplateSpec {
		p := poolPod(ns, "", "", "1", "")
		p.Spec.PriorityClassName = classes[kind]
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kind": kind}}, Spec: p.Spec}
	}

	// The Job replaces an evicted pod only once it has failed, and after
	// its pod failure backoff (10s). By the Job's default, as a ReplicaSet
	// does, it would replace it as soon as it is being deleted, and
	// kube-scheduler, which knows nothing of Muster's plans for that room,
	// would bind the replacement there the moment the victim is gone,
	// before Muster releases the gang: the gang would then preempt the
	// replacement in turn, and so on without end (a known limitation of
	// --preempt-unmanaged, which this test does not cover).
	low := template("low")
	low.Spec.RestartPolicy = corev1.RestartPolicyNever
	createJob(t, ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "low", Namespace: ns},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3), Completions: ptr.To[int32](3), Template: low,
			PodReplacementPolicy: ptr.To(batchv1.Failed)},
	})
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "mid", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "mid"}},
			Template: template("mid"),
		},
	}
	if _, err := kube.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ReplicaSet mid: %v", err)
	}
	var plain []*corev1.Pod
	for _, kind := range []string{"equal", "higher"} {
		tpl := template(kind)
		plain = append(plain, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: kind, Namespace: ns, Labels: tpl.Labels}, Spec: tpl.Spec})
	}
	createPods(t, ctx, plain)

	want := map[string]int{"low": 3, "mid": 3, "equal": 1, "higher": 1}
	s := unmanagedScene{gangClass: classes["equal"]}
	waitFor(t, ctx, "the 8 unmanaged pods to run", func(ctx context.Context) (bool, error) {
		s.pods = map[string][]corev1.Pod{}
		for _, p := range listPods(t, ctx, ns) {
			if _, ok := p.Labels[scheduling.PodGroupLabel]; ok {
				return false, fmt.Errorf("pod %s carries %s", p.Name, scheduling.PodGroupLabel)
			}
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				s.pods[p.Labels["kind"]] = append(s.pods[p.Labels["kind"]], p)
			}
		}
		for kind, n := range want {
			if len(s.pods[kind]) != n {
				return false, nil
			}
		}
		return true, nil
	})
	for kind, pods := range s.pods {
		for _, p := range pods {
			if got := ptr.Deref(p.Spec.Priority, 0); got != priorities[kind] {
				t.Fatalf("pod %s has priority %d, want %d from its PriorityClass", p.Name, got, priorities[kind])
			}
		}
	}
	return s
}

// expectPodVictims asserts that a recorded preemption of the gang priority
// names exactly n victims, each a pod of candidates (Kind Pod, its UID and
// priority, one pod), and returns them.
func expectPodVictims(t *testing.T, got *v1alpha1.PodGroupPreemption, ns string, candidates []corev1.Pod, n int) []corev1.Pod {
	t.Helper()
	if got.Priority != gangPriority || got.Time.IsZero() {
		t.Errorf("status.preemption has priority %d and time %v, want %d and a time", got.Priority, got.Time, gangPriority)
	}
	byName := map[string]corev1.Pod{}
	for _, p := range candidates {
		byName[p.Name] = p
	}
	var out []corev1.Pod
	seen := map[types.UID]bool{}
	for _, v := range got.Victims {
		p, ok := byName[v.Name]
		want := v1alpha1.PreemptionVictim{Kind: v1alpha1.VictimKindPod, Namespace: ns, Name: v.Name, UID: p.UID, Priority: ptr.Deref(p.Spec.Priority, 0), Pods: 1}
		if !ok || v != want || seen[p.UID] {
			t.Errorf("status.preemption victim %+v, want one of the pods %v, once, as %+v", v, sortedNames(candidates), want)
			continue
		}
		seen[p.UID] = true
		out = append(out, p)
	}
	if len(got.Victims) != n {
		t.Fatalf("status.preemption names %d victims %+v, want %d pods of %v", len(got.Victims), got.Victims, n, sortedNames(candidates))
	}
	return out
}

// expectPodsUntouched asserts that each of pods is still there, and that
// the watch never saw it carry DisruptionTarget or being deleted.
func (w *preemptionWatch) expectPodsUntouched(t *testing.T, ctx context.Context, pods []corev1.Pod) {
	t.Helper()
	now := uids(listPods(t, ctx, w.ns))
	for _, p := range pods {
		if r := w.pod(p.UID); !now[p.UID] || r.deleting || r.disruption != "" {
			t.Errorf("pod %s (priority %d) was touched: still there %t, deleted %t, DisruptionTarget %q",
				p.Name, ptr.Deref(p.Spec.Priority, 0), now[p.UID], r.deleting, r.disruption)
		}
	}
}

// waitEvents waits for Events of the reason on the object named name, and
// returns them.
func waitEvents(t *testing.T, ctx context.Context, ns, name, reason string) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	waitFor(t, ctx, fmt.Sprintf("a %s event on %s", reason, name), func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil {
			return false, nil
		}
		out = events.Items
		return len(out) > 0, nil
	})
	return out
}

func sortedNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}
