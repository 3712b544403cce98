package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMusterOutage: while no muster-apiserver replica answers,
//   - labelled pod creates still go through, gated: the webhook is the
//     chart's muster-webhook Deployment, apart from the API and the
//     controller, so their outage (an OOM, a crash) refuses no create;
//     once the webhook is down too, labelled pod creates are refused (its
//     failurePolicy is Fail: a pod created then would escape the gang) and
//     other pods are created as usual;
//   - namespace deletion waits: the namespace controller must delete every
//     namespaced resource of every API group, and cannot list Muster's
//     while its APIService is unavailable, so the namespace stays
//     Terminating with NamespaceDeletionDiscoveryFailure, as for any
//     aggregated API that is down;
//   - a deleted running pod stays Terminating on Muster's finalizer, so
//     that its end is still counted.
//
// Once Muster is back, all three go through without anyone's help, and
// the pod created while the API was down is counted in its gang.
func TestMusterOutage(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	ns := namespace(t, ctx)
	bystander := namespace(t, ctx)
	createGroup(t, ctx, ns, "gang", 2)
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("g-%d", i), podOpts{group: "gang"}))
	}
	waitScheduled(t, ctx, ns, "gang", 2)

	env.KillMuster()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := env.RestartMuster(context.Background()); err != nil {
				t.Errorf("restarting Muster: %v", err)
			}
		}
	})
	waitFor(t, ctx, "the aggregator to see Muster down", func(ctx context.Context) (bool, error) {
		_, err := muster.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
		return err != nil, nil
	})

	during, err := kube.CoreV1().Pods(ns).Create(ctx, newPod(ns, "during", podOpts{group: "gang"}), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("labelled pod create while the API is down and the webhook up: %v, want it created", err)
	} else if !isGated(during) || !hasTrackingFinalizer(during) {
		t.Errorf("the pod created while the API was down has gates %v and finalizers %v, want Muster's gate and finalizer",
			during.Spec.SchedulingGates, during.Finalizers)
	}
	env.KillWebhook()
	webhookRestarted := false
	t.Cleanup(func() {
		if !webhookRestarted {
			if err := env.RestartWebhook(context.Background()); err != nil {
				t.Errorf("restarting the webhook: %v", err)
			}
		}
	})
	_, err = kube.CoreV1().Pods(ns).Create(ctx, newPod(ns, "labelled", podOpts{group: "gang"}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("labelled pod create while the webhook is down: %v, want the webhook's failure", err)
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, newPod(ns, "plain", podOpts{}), metav1.CreateOptions{}); err != nil {
		t.Errorf("unlabelled pod create while Muster is down: %v", err)
	}
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "g-0", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting a running pod: %v", err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, bystander, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace %s: %v", bystander, err)
	}
	waitFor(t, ctx, "the namespace controller to report the discovery failure", func(ctx context.Context) (bool, error) {
		got, err := kube.CoreV1().Namespaces().Get(ctx, bystander, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("namespace %s deleted while Muster was down: %v", bystander, err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	pod, err := kube.CoreV1().Pods(ns).Get(ctx, "g-0", metav1.GetOptions{})
	if err != nil || !hasTrackingFinalizer(pod) {
		t.Errorf("the deleted running pod = %v (finalizers %v); want it Terminating on Muster's finalizer", err, pod.GetFinalizers())
	}

	began := time.Now()
	if err := env.RestartWebhook(ctx); err != nil {
		t.Fatalf("restarting the webhook: %v", err)
	}
	webhookRestarted = true
	if err := env.RestartMuster(ctx); err != nil {
		t.Fatalf("restarting Muster: %v", err)
	}
	restarted = true
	t.Logf("Muster answered again after %s", time.Since(began).Round(time.Millisecond))
	// The namespace controller retries a failed deletion with exponential
	// backoff, at most 60s apart, and then waits its 5s grace period.
	const recovery = 60*time.Second + namespaceDeletionLimit
	if took, err := waitNamespaceGone(ctx, kube, bystander, recovery); err != nil {
		t.Errorf("namespace %s still there %s after Muster came back", bystander, recovery)
	} else {
		t.Logf("namespace %s deleted %s after Muster came back", bystander, took.Round(time.Millisecond))
	}
	waitFor(t, ctx, "the deleted pod to be gone and counted, and the pod created meanwhile released", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, "g-0", metav1.GetOptions{})
		pg, gerr := getGroup(ctx, ns, "gang")
		p, perr := kube.CoreV1().Pods(ns).Get(ctx, "during", metav1.GetOptions{})
		return isNotFound(err) && gerr == nil && pg.Status.Failed == 1 && perr == nil && !isGated(p), nil
	})
	createPod(t, ctx, newPod(ns, "labelled", podOpts{group: "gang"}))
}
