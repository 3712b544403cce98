package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// policyDenial is the start of what kube-apiserver says when policy denies.
func policyDenial(policy string) string {
	return "ValidatingAdmissionPolicy '" + policy + "'"
}

// waitPolicyDenies retries write as a dry run until policy denies it, since
// a new policy applies only once kube-apiserver's policy informer has it,
// then makes the write for real and returns its error.
func waitPolicyDenies(t *testing.T, ctx context.Context, policy string, write func(ctx context.Context, dryRun []string) error) error {
	t.Helper()
	waitFor(t, ctx, "policy "+policy+" to deny the write", func(ctx context.Context) (bool, error) {
		err := write(ctx, []string{metav1.DryRunAll})
		return err != nil && strings.Contains(err.Error(), policyDenial(policy)), nil
	})
	return write(ctx, nil)
}

// TestPolicyGroupLabelImmutable: the ValidatingAdmissionPolicy, not the
// webhook, refuses a change of a pod's group label, through pods and through
// pods/status, naming the field and the rule.
func TestPolicyGroupLabelImmutable(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	pod := createPod(t, ctx, newPod(ns, "p", podOpts{group: "g"}))
	field := "metadata.labels[" + scheduling.PodGroupLabel + "]"

	tests := []struct {
		name  string
		write func(ctx context.Context, dryRun []string) error
	}{
		{"pods", func(ctx context.Context, dryRun []string) error {
			patch := []byte(`{"metadata":{"labels":{"` + scheduling.PodGroupLabel + `":"other"}}}`)
			_, err := kube.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{DryRun: dryRun})
			return err
		}},
		{"pods/status", func(ctx context.Context, dryRun []string) error {
			cur, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Labels[scheduling.PodGroupLabel] = "other"
			_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{DryRun: dryRun})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := waitPolicyDenies(t, ctx, pods.LabelsPolicyName, tt.write)
			if err == nil || !strings.Contains(err.Error(), policyDenial(pods.LabelsPolicyName)) {
				t.Fatalf("changing the group label: got %v, want a denial by %s", err, pods.LabelsPolicyName)
			}
			if !apierrors.IsInvalid(err) {
				t.Errorf("denial %v is not Invalid (422)", err)
			}
			for _, want := range []string{field, `Invalid value: "other"`, "field is immutable", `(it was "g")`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("denial %q does not say %q", err, want)
				}
			}
			got, getErr := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if getErr != nil {
				t.Fatal(getErr)
			}
			if v := got.Labels[scheduling.PodGroupLabel]; v != "g" {
				t.Errorf("group label is %q after the denied write, want g", v)
			}
		})
	}
}

// TestPolicyFinalizerRemovableWithoutMuster: with Muster's server stopped,
// updates to a labelled pod, the removal of Muster's finalizer by hand
// included, still go through: no webhook sees pod updates.
func TestPolicyFinalizerRemovableWithoutMuster(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	pod := createPod(t, ctx, newPod(ns, "p", podOpts{group: "g"}))
	if !slices.Contains(pod.Finalizers, scheduling.TrackingFinalizer) {
		t.Fatalf("created pod has finalizers %v, want %s", pod.Finalizers, scheduling.TrackingFinalizer)
	}

	env.KillMuster()
	t.Cleanup(func() {
		if err := env.RestartMuster(context.Background()); err != nil {
			t.Errorf("restarting Muster: %v", err)
		}
	})
	// The server is gone: a request to Muster's API fails.
	if _, err := getGroup(ctx, ns, "g"); err == nil {
		t.Fatal("Muster's API still answers after its server was killed")
	}

	annotate := []byte(`{"metadata":{"annotations":{"example.com/note":"edited while Muster is down"}}}`)
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, annotate, metav1.PatchOptions{}); err != nil {
		t.Fatalf("updating a labelled pod with Muster down: %v", err)
	}
	if err := kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the pod: %v", err)
	}
	unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, unfinalize, metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the finalizer by hand with Muster down: %v", err)
	}
	waitFor(t, ctx, "the pod to be gone", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestPolicyMusterWritesConfined: Muster's service account may change a pod
// only as the controller does; anything else it writes is denied by name.
func TestPolicyMusterWritesConfined(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	pod := createPod(t, ctx, newPod(ns, "p", podOpts{group: "g"}))
	muster := env.ImpersonatingClient(musterUser())
	// Every write is a dry run: the pod stays as created for the next.
	patch := func(c kubernetes.Interface, pt types.PatchType, body string) func(ctx context.Context, _ []string) error {
		return func(ctx context.Context, _ []string) error {
			_, err := c.CoreV1().Pods(ns).Patch(ctx, pod.Name, pt, []byte(body), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}

	denied := []struct {
		name, patch, field string
	}{
		{"a label", `{"metadata":{"labels":{"team":"x"}}}`, "metadata.labels"},
		{"an annotation", `{"metadata":{"annotations":{"team":"x"}}}`, "metadata.annotations"},
		{"the image", `{"spec":{"containers":[{"name":"main","image":"registry.k8s.io/pause:3.9"}]}}`, "spec.containers"},
		{"another finalizer", `{"metadata":{"finalizers":["` + scheduling.TrackingFinalizer + `","example.com/other"]}}`, "metadata.finalizers"},
		{"a node selector", `{"spec":{"nodeSelector":{"zone":"a"}}}`, "spec.nodeSelector"},
	}
	for i, tt := range denied {
		t.Run("denied "+tt.name, func(t *testing.T) {
			write := patch(muster, types.StrategicMergePatchType, tt.patch)
			var err error
			if i == 0 {
				err = waitPolicyDenies(t, ctx, pods.WritesPolicyName, write)
			} else {
				err = write(ctx, nil)
			}
			if err == nil || !strings.Contains(err.Error(), policyDenial(pods.WritesPolicyName)) {
				t.Fatalf("Muster changing %s: got %v, want a denial by %s", tt.name, err, pods.WritesPolicyName)
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.field+": Forbidden") {
				t.Errorf("denial %q is not Forbidden on %s", err, tt.field)
			}
			// The same write by an administrator passes the policy.
			if err := patch(kube, types.StrategicMergePatchType, tt.patch)(ctx, nil); err != nil && strings.Contains(err.Error(), pods.WritesPolicyName) {
				t.Errorf("the policy denies an administrator too: %v", err)
			}
		})
	}

	allowed := []struct{ name, patch string }{
		{"removing its gate and pinning to a node", `[{"op":"replace","path":"/spec/schedulingGates","value":[]},` +
			`{"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
			`{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-0"]}]}]}}}}]`},
		{"removing its finalizer", `[{"op":"replace","path":"/metadata/finalizers","value":[]}]`},
	}
	for _, tt := range allowed {
		t.Run("allowed "+tt.name, func(t *testing.T) {
			if err := patch(muster, types.JSONPatchType, tt.patch)(ctx, nil); err != nil {
				t.Errorf("Muster %s: %v", tt.name, err)
			}
		})
	}

	// Adoption: Muster puts its finalizer back on a running pod that lacks it.
	bare := createPod(t, ctx, newPod(ns, "untracked", podOpts{}))
	adopt := []byte(`{"metadata":{"finalizers":["` + scheduling.TrackingFinalizer + `"]}}`)
	if _, err := muster.CoreV1().Pods(ns).Patch(ctx, bare.Name, types.MergePatchType, adopt, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("Muster adding its finalizer: %v", err)
	}
}
