package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
)

// conditionPatch is a strategic-merge patch of pods/status that adds, or
// replaces, the condition of type ct, with extra merged into the status.
func conditionPatch(t *testing.T, ct corev1.PodConditionType, reason string, extra map[string]any) string {
	t.Helper()
	status := map[string]any{"conditions": []corev1.PodCondition{{
		Type: ct, Status: corev1.ConditionTrue, Reason: reason,
		Message: "evicted for a gang of higher priority", LastTransitionTime: metav1.Now(),
	}}}
	for k, v := range extra {
		status[k] = v
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// patchStatus patches a pod's status as client; a dry run unless real.
func patchStatus(client kubernetes.Interface, ns, name, body string, real bool) func(ctx context.Context, _ []string) error {
	return func(ctx context.Context, _ []string) error {
		opts := metav1.PatchOptions{}
		if !real {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(body), opts, "status")
		return err
	}
}

// deletePod deletes a pod as client, with the UID precondition preemption
// uses; a dry run unless real.
func deletePod(client kubernetes.Interface, pod *corev1.Pod, real bool) func(ctx context.Context, _ []string) error {
	return func(ctx context.Context, _ []string) error {
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}
		if !real {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		return client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
	}
}

// TestPolicyMusterPreemptionWrites: to preempt a pod, labelled or not,
// Muster's controller may add the condition DisruptionTarget with reason
// PreemptionByMuster through pods/status and then delete the pod. As its
// service account, deleting a pod without that condition is denied by
// muster-pod-writes, and so is any other change through pods/status
// (another condition, a DisruptionTarget of another reason, another status
// field), each naming the field; an administrator is not confined.
func TestPolicyMusterPreemptionWrites(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	muster := env.ImpersonatingClient(musterUser())
	victims := []struct {
		kind string
		pod  *corev1.Pod
	}{
		// Its group never exists: the pod stays gated.
		{"labelled", createPod(t, ctx, newPod(ns, "labelled", podOpts{group: "never-created"}))},
		{"unlabelled", createPod(t, ctx, newPod(ns, "unlabelled", podOpts{}))},
	}
	first := true
	for _, v := range victims {
		t.Run(v.kind, func(t *testing.T) {
			name := v.pod.Name
			denied := []struct {
				name, field string
				write       func(ctx context.Context, dryRun []string) error
			}{
				{"deleting it unmarked", "status.conditions", deletePod(muster, v.pod, false)},
				{"adding another condition", "status.conditions",
					patchStatus(muster, ns, name, conditionPatch(t, "example.com/Drained", scheduling.ReasonPreemptionByMuster, nil), false)},
				{"a DisruptionTarget of the scheduler's reason", "status.conditions",
					patchStatus(muster, ns, name, conditionPatch(t, corev1.DisruptionTarget, "PreemptionByScheduler", nil), false)},
				{"its mark and another status field", "status.message",
					patchStatus(muster, ns, name, conditionPatch(t, corev1.DisruptionTarget, scheduling.ReasonPreemptionByMuster,
						map[string]any{"message": "preempted by Muster"}), false)},
			}
			for _, d := range denied {
				var err error
				if first {
					err = waitPolicyDenies(t, ctx, manifests.WritesPolicyName, d.write)
					first = false
				} else {
					err = d.write(ctx, nil)
				}
				if err == nil || !strings.Contains(err.Error(), policyDenial(manifests.WritesPolicyName)) {
					t.Errorf("Muster %s: got %v, want a denial by %s", d.name, err, manifests.WritesPolicyName)
					continue
				}
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), d.field+": Forbidden") {
					t.Errorf("Muster %s: denial %q is not Forbidden on %s", d.name, err, d.field)
				}
			}
			// An administrator is not confined: the policy leaves its delete
			// of the unmarked pod alone.
			if err := deletePod(kube, v.pod, false)(ctx, nil); err != nil {
				t.Errorf("an administrator deleting the unmarked pod (dry run): %v", err)
			}

			mark := conditionPatch(t, corev1.DisruptionTarget, scheduling.ReasonPreemptionByMuster, nil)
			before, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := patchStatus(muster, ns, name, mark, true)(ctx, nil); err != nil {
				t.Fatalf("Muster marking the pod: %v", err)
			}
			marked, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(marked.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget })
			if i < 0 || marked.Status.Conditions[i].Reason != scheduling.ReasonPreemptionByMuster || marked.Status.Conditions[i].Status != corev1.ConditionTrue {
				t.Fatalf("after Muster's mark the pod has conditions %+v, want DisruptionTarget True %s", marked.Status.Conditions, scheduling.ReasonPreemptionByMuster)
			}
			// (Its phase is the kubelet's, kwok's here, and may move meanwhile.)
			if !maps.Equal(marked.Labels, before.Labels) || !slices.Equal(marked.Finalizers, before.Finalizers) {
				t.Errorf("Muster's mark changed more than the conditions: labels %v, finalizers %v; were %v, %v",
					marked.Labels, marked.Finalizers, before.Labels, before.Finalizers)
			}
			if err := deletePod(muster, marked, true)(ctx, nil); err != nil {
				t.Fatalf("Muster deleting the marked pod: %v", err)
			}
			waitFor(t, ctx, "the pod to be deleted", func(ctx context.Context) (bool, error) {
				p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), nil
			})
		})
	}
}
