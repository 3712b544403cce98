package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// podEvents lists the core/v1 Events with reason recorded about a pod.
func podEvents(ctx context.Context, ns, pod, reason string) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod, "reason": reason}.AsSelector().String()
	list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitPodEvent waits until a core/v1 Event with reason is recorded about
// the pod, and returns it.
func waitPodEvent(t *testing.T, ctx context.Context, ns, pod, reason string) corev1.Event {
	t.Helper()
	var got []corev1.Event
	waitFor(t, ctx, fmt.Sprintf("event %s on pod %s", reason, pod), func(ctx context.Context) (bool, error) {
		var err error
		got, err = podEvents(ctx, ns, pod, reason)
		return err == nil && len(got) > 0, nil
	})
	return got[0]
}

// TestPodEventsArrive: the events Muster records about pods reach the
// cluster: a pod whose PodGroup does not exist is told it waits for it.
func TestPodEventsArrive(t *testing.T) {
	ctx := testContext(t, time.Minute)
	ns := namespace(t, ctx)
	createPod(t, ctx, newPod(ns, "orphan", podOpts{group: "nobody"}))
	e := waitPodEvent(t, ctx, ns, "orphan", "WaitingForPodGroup")
	if want := "waiting for PodGroup nobody"; e.Message != want || e.Type != corev1.EventTypeNormal {
		t.Errorf("event = %s %q, want Normal %q", e.Type, e.Message, want)
	}
	deleteAllPods(t, ctx, ns, 15*time.Second)
}

// TestDeletedGroupStaysDeleted: a group that its pods' min-count annotation
// created, deleted while those pods run, stays deleted: running pods do not
// bring it back. A gated pod that arrives later does, and the new group
// adopts the running pods (their finalizer comes back), so that it counts
// every pod and succeeds.
func TestDeletedGroupStaysDeleted(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	ann := map[string]string{scheduling.MinCountAnnotation: "2"}
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "g2", runFor: "45s", annotations: ann}))
	}
	runningTracked := func(want bool) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			for _, name := range []string{"w-0", "w-1"} {
				p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil || p.Status.Phase != corev1.PodRunning || hasTrackingFinalizer(p) != want {
					return false, nil
				}
			}
			return true, nil
		}
	}
	waitFor(t, ctx, "both pods to run with the tracking finalizer", runningTracked(true))
	first, err := getGroup(ctx, ns, "g2")
	if err != nil {
		t.Fatalf("the group the annotations created: %v", err)
	}

	// kubectl delete pg g2
	if err := muster.SchedulingV1alpha1().PodGroups(ns).Delete(ctx, "g2", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the group: %v", err)
	}
	waitFor(t, ctx, "the group to be gone (or back, which is the defect)", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "g2")
		return isNotFound(err) || (err == nil && pg.UID != first.UID), nil
	})
	waitFor(t, ctx, "the running pods to lose the tracking finalizer", runningTracked(false))
	// A gated pod without annotations: once it is told to wait, the
	// controller has synced the missing group with the running pods in view.
	createPod(t, ctx, newPod(ns, "late", podOpts{group: "g2", runFor: "2s"}))
	waitFor(t, ctx, "late to be told it waits for the group, or the group to come back", func(ctx context.Context) (bool, error) {
		if pg, err := getGroup(ctx, ns, "g2"); err == nil {
			return false, fmt.Errorf("the deleted group came back (created from pod %q)", pg.Annotations["scheduling.muster.dev/created-from-pod"])
		}
		told, err := podEvents(ctx, ns, "late", "WaitingForPodGroup")
		return err == nil && len(told) > 0, nil
	})
	if _, err := getGroup(ctx, ns, "g2"); !isNotFound(err) {
		t.Fatalf("the deleted group came back from its running pods' annotations: %v", err)
	}

	// A gated pod with the annotation, after the deletion, creates it again.
	createPod(t, ctx, newPod(ns, "late-2", podOpts{group: "g2", runFor: "2s", annotations: ann}))
	waitFor(t, ctx, "the running pods to be adopted by the new group", runningTracked(true))
	pg := waitGroupFinished(t, ctx, ns, "g2")
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished); c.Reason != v1alpha1.ReasonSucceeded {
		t.Errorf("Finished = %s/%s %q, want Succeeded", c.Status, c.Reason, c.Message)
	}
	if pg.Status.Succeeded != 4 || pg.Status.Failed != 0 {
		t.Errorf("succeeded=%d failed=%d, want 4 and 0: every pod counted, the adopted ones too", pg.Status.Succeeded, pg.Status.Failed)
	}
	expectNoFinalizers(t, ctx, ns)
	deleteAllPods(t, ctx, ns, 15*time.Second)
}
