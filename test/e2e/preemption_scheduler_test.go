package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestSchedulerPreemptionByAnotherTenantTakesOnePod: a tenant's unlabelled
// pod of a higher PriorityClass, pinned to a node where another tenant's
// admitted gang runs, makes kube-scheduler preempt one pod of that gang.
// Under the default --complete-scheduler-preemption=Released, Muster does
// not turn that into the whole gang's eviction (step 6b): the gang's other
// pods keep running, the group stays admitted and unpreempted, and a
// PartlyPreempted event says why, naming nothing of the other tenant.
func TestSchedulerPreemptionByAnotherTenantTakesOnePod(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	mine, theirs := namespace(t, ctx), namespace(t, ctx)
	// Room for 4 pods of 15 CPU: two per node, named after neither tenant.
	pool := newTenantPool(t, ctx, "sched")
	w := watchPreemption(t, ctx, theirs)
	createPods(t, ctx, pool.gang(theirs, "gang", pool.low))
	running := waitBound(t, ctx, theirs, "gang", 4)
	target := running[0].Spec.NodeName

	// The other tenant's pod: no group label, so Muster neither gates nor
	// releases it; kube-scheduler alone places it, on target.
	intruder := poolPod(pool.name, "intruder", "", "15", "10m")
	intruder.Namespace = mine
	intruder.Spec.PriorityClassName = pool.high
	intruder.Spec.NodeSelector[corev1.LabelHostname] = target
	if _, err := kube.CoreV1().Pods(mine).Create(ctx, intruder, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the intruder: %v", err)
	}
	waitFor(t, ctx, "the intruder to run on "+target, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(mine).Get(ctx, "intruder", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == target, nil
	})
	expectEvent(t, ctx, theirs, "gang", scheduling.EventPartlyPreempted)

	var taken []string
	for _, p := range running {
		if r := w.pod(p.UID); r.disruption != "" {
			taken = append(taken, fmt.Sprintf("%s (%s on %s)", p.Name, r.disruption, p.Spec.NodeName))
			if r.disruption != corev1.PodReasonPreemptionByScheduler || p.Spec.NodeName != target {
				t.Errorf("pod %s on %s was disrupted by %s, want only kube-scheduler's preemption on %s", p.Name, p.Spec.NodeName, r.disruption, target)
			}
		}
	}
	if len(taken) != 1 {
		t.Errorf("pods of the gang disrupted: %v, want the one kube-scheduler took", taken)
	}
	pg, err := getGroup(ctx, theirs, "gang")
	if err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) || !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted) {
		t.Errorf("the gang's conditions %+v: want it still admitted and not preempted", pg.Status.Conditions)
	}
	pods, err := kube.CoreV1().Pods(theirs).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel + "=gang"})
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			left++
		}
	}
	if left != 3 {
		t.Errorf("%d pods of the gang still run, want the 3 kube-scheduler left", left)
	}
	events, err := kube.CoreV1().Events(theirs).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, mine) || strings.Contains(e.Message, "intruder") {
			t.Errorf("event %s %s in the gang's namespace names the other tenant: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	t.Logf("nodes %v; kube-scheduler took %v; %d of the gang still run", pool.nodes, taken, left)
}
