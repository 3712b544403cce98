package abuse

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// poolKey labels and taints the nodes of the preemption test's pool, so
// that nothing else runs there and its numbers are its own.
const poolKey = "abuse.muster.dev/pool"

// TestAbusePreemption (issue 34, paths 5 and 6): mallory, who may only
// create pods, runs one unlabelled pod of a PriorityClass above another
// tenant's gang, pinned to a node where that gang runs. kube-scheduler
// preempts one pod of the gang for it. Muster, at its defaults
// (--complete-scheduler-preemption=Released), must not turn that into the
// whole gang's eviction, and nothing Muster writes that the other tenant
// reads may name mallory's namespace, pod or UID.
func TestAbusePreemption(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	victim := newNamespace(t, ctx, "victim")
	bad := mallory(t, ctx)
	pool := fmt.Sprintf("pool-%d", time.Now().UnixNano()%100000)
	nodes, err := env.AddNodes(ctx, cluster.NodeSpec{
		Prefix: pool, Count: 2, CPU: "32", Memory: "64Gi", Labels: map[string]string{poolKey: pool},
		Taints: []corev1.Taint{{Key: poolKey, Value: pool, Effect: corev1.TaintEffectNoSchedule}},
	})
	if err != nil {
		t.Fatalf("adding the pool's nodes: %v", err)
	}
	low, high := env.NewPriorityClass(t, ctx, pool+"-low", 100), env.NewPriorityClass(t, ctx, pool+"-high", 1000)

	// The victim: a gang of 4 pods of 15 cpu, two on each node, filling it.
	var gang []*corev1.Pod
	for i := range 4 {
		p := poolPod(victim, fmt.Sprintf("gang-%d", i), pool, "15")
		p.Labels[scheduling.PodGroupLabel] = "gang"
		p.Annotations = map[string]string{scheduling.MinCountAnnotation: "4", cluster.RunForAnnotation: "10m"}
		p.Spec.PriorityClassName = low
		gang = append(gang, p)
	}
	if accepted, _, first := createAll(ctx, tenant{ns: victim, client: kube}, gang); accepted != len(gang) {
		t.Fatalf("creating the victim's gang: %d of %d created: %v", accepted, len(gang), first)
	}
	var running []corev1.Pod
	if err := waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		running = runningPods(ctx, victim, "gang")
		return len(running) == len(gang), nil
	}); err != nil {
		t.Fatalf("the victim's gang never ran whole: %d of %d running", len(running), len(gang))
	}
	target := running[0].Spec.NodeName

	// Mallory's pod: no group label, so kube-scheduler alone places it.
	intruder := poolPod(bad.ns, "intruder", pool, "15")
	intruder.Spec.PriorityClassName = high
	intruder.Spec.NodeSelector[corev1.LabelHostname] = target
	if err := create(ctx, bad, intruder); err != nil {
		t.Fatalf("mallory creating her pod: %v", err)
	}
	var placed *corev1.Pod
	if err := waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		placed, err = bad.client.CoreV1().Pods(bad.ns).Get(ctx, intruder.Name, metav1.GetOptions{})
		return err == nil && placed.Spec.NodeName == target, nil
	}); err != nil {
		t.Fatalf("mallory's pod never ran on %s (nodes %v)", target, nodes)
	}
	// Muster's decision on the preempted pod: the PartlyPreempted event.
	if err := waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		return len(musterEvents(ctx, t, victim, scheduling.EventPartlyPreempted)) > 0, nil
	}); err != nil {
		t.Fatalf("no %s event in %s: Muster never judged the preempted pod", scheduling.EventPartlyPreempted, victim)
	}

	// Path 5: one pod taken, not the gang.
	left := runningPods(ctx, victim, "gang")
	if len(left) != len(gang)-1 {
		t.Errorf("%d pods of the victim's gang still run after one pod of mallory's preempted it, want %d: one pod of a higher class evicted more than its room",
			len(left), len(gang)-1)
	}
	pg, err := muster.SchedulingV1alpha1().PodGroups(victim).Get(ctx, "gang", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) {
		t.Errorf("the victim's group is Preempted: %+v", meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionPreempted))
	}

	// Path 6: what Muster wrote where the victim reads.
	written := map[string]any{"the PodGroup's status": pg.Status, "Muster's events": musterEvents(ctx, t, victim, "")}
	pods, err := kube.CoreV1().Pods(victim).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Reason != corev1.PodReasonPreemptionByScheduler {
				written["pod "+p.Name+"'s DisruptionTarget"] = c
			}
		}
	}
	for what, v := range written {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{bad.ns, string(placed.UID), intruder.Name} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s in the victim's namespace names mallory's %q: %s", what, secret, b)
			}
		}
	}
	t.Logf("mallory's pod of class %s on %s: %d of %d pods of the victim's gang still run; Muster said %d events there, none naming her",
		high, target, len(left), len(gang), len(musterEvents(ctx, t, victim, "")))
}

// runningPods are the running, bound, not deleted pods of group in ns.
func runningPods(ctx context.Context, ns, group string) []corev1.Pod {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel + "=" + group})
	if err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	return out
}

// musterEvents are the events Muster's controller recorded in ns, of reason
// when it is not "".
func musterEvents(ctx context.Context, t *testing.T, ns, reason string) []corev1.Event {
	t.Helper()
	list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Source.Component == scheduling.ControllerName && (reason == "" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out
}

// poolPod is a pod of cpu in ns that runs only on the pool's nodes.
func poolPod(ns, name, pool, cpu string) *corev1.Pod {
	p := malloryPod(ns, name, "", map[string]string{cluster.RunForAnnotation: "10m"})
	delete(p.Labels, scheduling.PodGroupLabel)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	p.Spec.NodeSelector = map[string]string{poolKey: pool}
	p.Spec.Tolerations = []corev1.Toleration{{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	return p
}
