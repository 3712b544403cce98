package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// TestEtcdRestore restores Muster's etcd from a snapshot taken before some
// gangs ran and finished, the way docs/etcd.md says (muster-apiserver
// backup, then muster-apiserver restore with Muster and its etcd stopped),
// on a cluster of its own whose Muster has an etcd of its own. Then:
//   - no group that succeeded is marked Failed;
//   - the counts of pods that still exist come back, and what the restore
//     could not recover (a pod counted and deleted since the snapshot) is
//     said in the CountsRecovered condition, not guessed;
//   - no pod is left gated or on the tracking finalizer.
func TestEtcdRestore(t *testing.T) {
	c := clusterOfItsOwn(t, func(o *cluster.Options) { o.MusterEtcd = true })
	kube := kubernetes.NewForConfigOrDie(c.Config)
	mc := versioned.NewForConfigOrDie(c.Config)
	ctx := testContext(t, 6*time.Minute)
	ns := "restored"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForDefaultServiceAccount(ctx, ns); err != nil {
		t.Fatal(err)
	}
	group := func(name string) *v1alpha1.PodGroup {
		pg, err := mc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting PodGroup %s: %v", name, err)
		}
		return pg
	}
	create := func(group string, i int, runFor string) {
		p := newPod(ns, fmt.Sprintf("%s-%d", group, i), podOpts{group: group, runFor: runFor})
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
	}
	waitGroup := func(name, what string, cond func(*v1alpha1.PodGroup) bool) {
		waitFor(t, ctx, "PodGroup "+name+" "+what, func(ctx context.Context) (bool, error) {
			pg, err := mc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && cond(pg), nil
		})
	}
	finished := func(pg *v1alpha1.PodGroup) bool {
		return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished)
	}

	// Before the snapshot: "running" is admitted and its pods run; "waiting"
	// has 2 of its 3 pods, gated.
	for _, g := range []string{"running", "waiting"} {
		if _, err := mc.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, g, 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		create("running", i, "25s")
	}
	for i := range 2 {
		create("waiting", i, "2s")
	}
	waitGroup("running", "to be admitted", func(pg *v1alpha1.PodGroup) bool {
		return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
	})
	snapshot, err := c.BackupMusterEtcd(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	// After it: "waiting" gets its third pod, both gangs run, finish and
	// are counted; then one counted pod of "running" is deleted.
	create("waiting", 2, "2s")
	for _, g := range []string{"running", "waiting"} {
		waitGroup(g, "to succeed", func(pg *v1alpha1.PodGroup) bool {
			u := pg.Status.UncountedTerminatedPods
			return finished(pg) && pg.Status.Succeeded == 3 && (u == nil || len(u.Succeeded)+len(u.Failed) == 0)
		})
	}
	waitFor(t, ctx, "every pod to be counted", func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if scheduling.HasTrackingFinalizer(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "running-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	if err := c.RestoreMusterEtcd(ctx, snapshot); err != nil {
		t.Fatal(err)
	}
	t.Logf("Muster and its etcd stopped, restored and ready again in %v", time.Since(began).Round(time.Millisecond))

	// "waiting" lost its admission and its counts; all three pods exist.
	waitGroup("waiting", "to succeed again from its counted pods", func(pg *v1alpha1.PodGroup) bool {
		return finished(pg) && pg.Status.Succeeded == 3
	})
	// "running" lost its counts; one of its pods is gone for good.
	waitGroup("running", "to say its counts were recovered", func(pg *v1alpha1.PodGroup) bool {
		return meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionCountsRecovered)
	})
	// For longer than the release grace (10s), after which a group short
	// of pods fails, neither group may be marked Failed.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, name := range []string{"waiting", "running"} {
			if c := meta.FindStatusCondition(group(name).Status.Conditions, v1alpha1.ConditionFinished); c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonFailed {
				t.Fatalf("PodGroup %s, whose every pod succeeded, is marked Failed after the restore: %s", name, c.Message)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}

	waiting, running := group("waiting"), group("running")
	for _, pg := range []*v1alpha1.PodGroup{waiting, running} {
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished)
		t.Logf("PodGroup %s after the restore: succeeded %d, failed %d; Finished=%v/%v; CountsRecovered: %v", pg.Name,
			pg.Status.Succeeded, pg.Status.Failed, condStatus(c), condReason(c), condMessage(meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionCountsRecovered)))
		if c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonFailed {
			t.Errorf("PodGroup %s, whose every pod succeeded, is marked Failed after the restore: %s", pg.Name, c.Message)
		}
	}
	if c := meta.FindStatusCondition(waiting.Status.Conditions, v1alpha1.ConditionFinished); c == nil || c.Reason != v1alpha1.ReasonSucceeded {
		t.Errorf("PodGroup waiting: Finished %+v, want True/Succeeded", c)
	}
	if c := meta.FindStatusCondition(waiting.Status.Conditions, v1alpha1.ConditionAdmitted); c == nil || c.Reason != scheduling.ReasonAdmittedBeforeRestore {
		t.Errorf("PodGroup waiting: Admitted %+v, want True/%s", c, scheduling.ReasonAdmittedBeforeRestore)
	}
	if running.Status.Succeeded != 2 {
		t.Errorf("PodGroup running: succeeded %d after the restore, want the 2 counted pods that still exist", running.Status.Succeeded)
	}
	if c := meta.FindStatusCondition(running.Status.Conditions, v1alpha1.ConditionFinished); c == nil || c.Status != metav1.ConditionFalse || c.Reason != scheduling.ReasonCountsIncomplete {
		t.Errorf("PodGroup running: Finished %+v, want False/%s: one counted pod is gone, its count cannot be known", c, scheduling.ReasonCountsIncomplete)
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if scheduling.HasTrackingFinalizer(&p) || scheduling.HasGate(&p) {
			t.Errorf("pod %s is left with Muster's gate or finalizer after the restore: gates %v, finalizers %v", p.Name, p.Spec.SchedulingGates, p.Finalizers)
		}
	}
}

func condStatus(c *metav1.Condition) metav1.ConditionStatus {
	if c == nil {
		return ""
	}
	return c.Status
}

func condReason(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return c.Reason
}

func condMessage(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return c.Message
}
