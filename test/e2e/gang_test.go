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
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestGangOfEight: the first 7 pods stay gated; the 8th releases all 8, which
// are bound, run and succeed. Status ends succeeded=8 and Finished=True, no
// pod keeps the finalizer, deleting the pods finishes at once, and the
// controller spent exactly two pod writes per pod.
func TestGangOfEight(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "gang", 8)
	before := scrapeAPICalls(t, ctx)

	for i := range 7 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "gang", runFor: "3s"}))
	}
	waitFor(t, ctx, "the group to report 7 of 8 pods", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "gang")
		return err == nil && pg.Status.Pods == 7 && pg.Status.Gated == 7, nil
	})
	for _, p := range listPods(t, ctx, ns) {
		if !isGated(&p) || p.Spec.NodeName != "" {
			t.Fatalf("pod %s is not held: gated=%v node=%q", p.Name, isGated(&p), p.Spec.NodeName)
		}
		if !hasTrackingFinalizer(&p) || p.Labels[scheduling.ManagedLabel] != "true" {
			t.Fatalf("webhook did not prepare pod %s: finalizers=%v labels=%v", p.Name, p.Finalizers, p.Labels)
		}
	}
	pg, _ := getGroup(ctx, ns, "gang")
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "7 of the 8") {
		t.Errorf("Admitted condition = %+v, want False saying 7 of the 8", c)
	}

	createPod(t, ctx, newPod(ns, "w-7", podOpts{group: "gang", runFor: "3s"}))
	waitFor(t, ctx, "all 8 pods to be bound", func(ctx context.Context) (bool, error) {
		pods := listPods(t, ctx, ns)
		for _, p := range pods {
			if isGated(&p) || p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return len(pods) == 8, nil
	})

	pg = waitGroupFinished(t, ctx, ns, "gang")
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished); c.Reason != v1alpha1.ReasonSucceeded {
		t.Errorf("Finished reason = %s, want Succeeded", c.Reason)
	}
	if pg.Status.Succeeded != 8 || pg.Status.Failed != 0 || pg.Status.Phase != v1alpha1.PodGroupSucceeded {
		t.Errorf("status succeeded=%d failed=%d phase=%s, want 8, 0, Succeeded", pg.Status.Succeeded, pg.Status.Failed, pg.Status.Phase)
	}
	if !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionScheduled) || pg.Status.AdmissionTime == nil || pg.Status.CompletionTime == nil {
		t.Errorf("status = %+v, want Scheduled=True, admissionTime and completionTime", pg.Status)
	}
	expectNoFinalizers(t, ctx, ns)

	calls := scrapeAPICalls(t, ctx).Minus(before)
	t.Logf("controller API calls for a gang of 8: %v", calls)
	if got := calls[callKey{Client: "kube", Verb: "patch", Resource: "pods"}]; got != 16 {
		t.Errorf("pod patches = %v, want 16: one gate removal and one finalizer removal per pod", got)
	}
	deleteAllPods(t, ctx, ns, 15*time.Second)
}

// TestGroupGates: a complete group with a group-level gate stays gated until
// the gate is removed from the PodGroup.
func TestGroupGates(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "approved", 2, "example.com/approval")
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "approved"}))
	}
	waitFor(t, ctx, "the group to see both pods", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "approved")
		if err != nil || pg.Status.Pods != 2 {
			return false, nil
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
		return c != nil && c.Reason == "SchedulingGated" && pg.Status.Phase == v1alpha1.PodGroupGated, nil
	})
	for _, p := range listPods(t, ctx, ns) {
		if !isGated(&p) {
			t.Fatalf("pod %s was released while the group gate remains", p.Name)
		}
	}
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Patch(ctx, "approved", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/schedulingGates/0"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the group gate: %v", err)
	}
	waitFor(t, ctx, "both pods to run", func(ctx context.Context) (bool, error) {
		for _, p := range listPods(t, ctx, ns) {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	deleteAllPods(t, ctx, ns, 15*time.Second)
}

// TestReplacementAfterFailure: a pod fails, its replacement joins and is
// released at once; failed=1 is counted once and the group still succeeds.
func TestReplacementAfterFailure(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "retry", 3)
	createPod(t, ctx, newPod(ns, "bad", podOpts{group: "retry", runFor: "1s", exitCode: 1}))
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("good-%d", i), podOpts{group: "retry", runFor: "8s"}))
	}
	waitFor(t, ctx, "the failure to be counted", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "retry")
		return err == nil && pg.Status.Failed == 1, nil
	})
	createPod(t, ctx, newPod(ns, "replacement", podOpts{group: "retry", runFor: "2s"}))
	waitFor(t, ctx, "the replacement to be released at once", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "replacement", metav1.GetOptions{})
		return err == nil && !isGated(p) && p.Spec.NodeName != "", nil
	})
	pg := waitGroupFinished(t, ctx, ns, "retry")
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished); c.Reason != v1alpha1.ReasonSucceeded {
		t.Errorf("Finished = %+v, want reason Succeeded", c)
	}
	if pg.Status.Failed != 1 || pg.Status.Succeeded != 3 {
		t.Errorf("failed=%d succeeded=%d, want 1 and 3", pg.Status.Failed, pg.Status.Succeeded)
	}
	expectNoFinalizers(t, ctx, ns)
}

// TestRunningPodDeleted: a running pod that is deleted counts as failed,
// once, and loses its finalizer so that it goes away.
func TestRunningPodDeleted(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "shrink", 2)
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "shrink"}))
	}
	waitFor(t, ctx, "both pods to run", func(ctx context.Context) (bool, error) {
		pods := listPods(t, ctx, ns)
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return len(pods) == 2, nil
	})
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "w-0", metav1.DeleteOptions{GracePeriodSeconds: ptrInt64(1)}); err != nil {
		t.Fatalf("deleting a running pod: %v", err)
	}
	waitFor(t, ctx, "the deleted pod to be gone", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, "w-0", metav1.GetOptions{})
		return isNotFound(err), nil
	})
	pg, err := getGroup(ctx, ns, "shrink")
	if err != nil {
		t.Fatal(err)
	}
	if pg.Status.Failed != 1 || pg.Status.Succeeded != 0 || pg.Status.UncountedTerminatedPods != nil {
		t.Errorf("failed=%d succeeded=%d uncounted=%v, want 1, 0 and none", pg.Status.Failed, pg.Status.Succeeded, pg.Status.UncountedTerminatedPods)
	}
	// Counted once: it stays 1 while the group keeps syncing.
	createPod(t, ctx, newPod(ns, "w-2", podOpts{group: "shrink"}))
	waitFor(t, ctx, "the new pod to be released", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "w-2", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", nil
	})
	if pg, _ := getGroup(ctx, ns, "shrink"); pg.Status.Failed != 1 {
		t.Errorf("failed = %d after more syncs, want 1", pg.Status.Failed)
	}
	deleteAllPods(t, ctx, ns, 15*time.Second)
}

// TestGroupDeletedWhilePodsRun: deleting a PodGroup takes Muster's finalizer
// off all its pods, so none can be stuck Terminating, and then the group goes.
func TestGroupDeletedWhilePodsRun(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "doomed", 3)
	for i := range 3 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "doomed"}))
	}
	waitFor(t, ctx, "the pods to run", func(ctx context.Context) (bool, error) {
		for _, p := range listPods(t, ctx, ns) {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	if err := muster.SchedulingV1alpha1().PodGroups(ns).Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the group: %v", err)
	}
	waitFor(t, ctx, "the group to be gone", func(ctx context.Context) (bool, error) {
		_, err := getGroup(ctx, ns, "doomed")
		return isNotFound(err), nil
	})
	expectNoFinalizers(t, ctx, ns)
	deleteAllPods(t, ctx, ns, 15*time.Second)
}

// TestPodsCreateTheirGroup: plain pods with only the label and the min-count
// annotation make the controller create the PodGroup, and the gang runs.
func TestPodsCreateTheirGroup(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	ann := map[string]string{scheduling.MinCountAnnotation: "3"}
	for i := range 3 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "implicit", runFor: "2s", annotations: ann}))
	}
	pg := waitGroupFinished(t, ctx, ns, "implicit")
	if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 3 {
		t.Errorf("created group policy = %+v, want gang of 3", pg.Spec.SchedulingPolicy)
	}
	if pg.Status.Succeeded != 3 {
		t.Errorf("succeeded = %d, want 3", pg.Status.Succeeded)
	}
}

// TestWorkloadTemplatePolicy: a PodGroup with a workloadRef gets its policy
// from the template, through the aggregator, and its gang runs.
func TestWorkloadTemplatePolicy(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	w := &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns},
		Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
			Name: "workers", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2}},
		}}},
	}
	if _, err := muster.SchedulingV1alpha1().Workloads(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create workload: %v", err)
	}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "job-workers", Namespace: ns},
		Spec:       v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "job", TemplateName: "workers"}},
	}
	created, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create group: %v", err)
	}
	if g := created.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 2 {
		t.Fatalf("policy = %+v, want the template's gang of 2", created.Spec.SchedulingPolicy)
	}
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "job-workers", runFor: "2s"}))
	}
	if got := waitGroupFinished(t, ctx, ns, "job-workers"); got.Status.Succeeded != 2 {
		t.Errorf("succeeded = %d, want 2", got.Status.Succeeded)
	}
	waitFor(t, ctx, "the Workload status to be observed", func(ctx context.Context) (bool, error) {
		w, err := muster.SchedulingV1alpha1().Workloads(ns).Get(ctx, "job", metav1.GetOptions{})
		return err == nil && w.Status.ObservedGeneration == w.Generation && len(w.Status.Conditions) == 1, nil
	})
}

// TestUntouchedPods: pods in an excluded namespace, and pods without the
// label, get no gate, no finalizer and no label from Muster.
func TestUntouchedPods(t *testing.T) {
	ctx := testContext(t, time.Minute)
	ns := namespace(t, ctx)
	tests := []struct {
		name, namespace string
		opts            podOpts
	}{
		{"no-label", ns, podOpts{}},
		{"kube-system-" + ns[len(ns)-5:], "kube-system", podOpts{group: "gang"}},
	}
	for _, tc := range tests {
		p := createPod(t, ctx, newPod(tc.namespace, tc.name, tc.opts))
		t.Cleanup(func() {
			_ = kube.CoreV1().Pods(tc.namespace).Delete(context.Background(), tc.name, metav1.DeleteOptions{GracePeriodSeconds: ptrInt64(0)})
		})
		if isGated(p) || hasTrackingFinalizer(p) || p.Labels[scheduling.ManagedLabel] != "" {
			t.Errorf("%s/%s was touched: gates=%v finalizers=%v labels=%v", tc.namespace, tc.name, p.Spec.SchedulingGates, p.Finalizers, p.Labels)
		}
		waitFor(t, ctx, tc.name+" to be scheduled normally", func(ctx context.Context) (bool, error) {
			got, err := kube.CoreV1().Pods(tc.namespace).Get(ctx, tc.name, metav1.GetOptions{})
			return err == nil && got.Spec.NodeName != "", nil
		})
	}
	if _, err := getGroup(ctx, "kube-system", "gang"); !isNotFound(err) {
		t.Errorf("a PodGroup appeared in kube-system: %v", err)
	}
}

// TestInvalidAnnotations: the validating webhook rejects bad input, naming the field.
func TestInvalidAnnotations(t *testing.T) {
	ctx := testContext(t, time.Minute)
	ns := namespace(t, ctx)
	tests := []struct {
		name      string
		opts      podOpts
		wantField string
	}{
		{"min-count-not-a-number", podOpts{group: "g", annotations: map[string]string{scheduling.MinCountAnnotation: "eight"}}, "metadata.annotations[scheduling.muster.dev/min-count]"},
		{"min-count-zero", podOpts{group: "g", annotations: map[string]string{scheduling.MinCountAnnotation: "0"}}, "metadata.annotations[scheduling.muster.dev/min-count]"},
		{"workload-without-template", podOpts{group: "g", annotations: map[string]string{scheduling.WorkloadAnnotation: "job"}}, "metadata.annotations[scheduling.muster.dev/template]"},
		{"group-not-a-name", podOpts{group: "Not_A_Name"}, "metadata.labels[scheduling.muster.dev/pod-group]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kube.CoreV1().Pods(ns).Create(ctx, newPod(ns, tc.name, tc.opts), metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.wantField) {
				t.Fatalf("create: %v, want a rejection naming %s", err, tc.wantField)
			}
		})
	}
	// The group label cannot change once set.
	createPod(t, ctx, newPod(ns, "member", podOpts{group: "g"}))
	_, err := kube.CoreV1().Pods(ns).Patch(ctx, "member", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"scheduling.muster.dev/pod-group":"other"}}}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "metadata.labels[scheduling.muster.dev/pod-group]") {
		t.Errorf("changing the group label: %v, want a rejection naming the label", err)
	}
}

// TestGangFailsWithoutReplacement: when every pod has failed and no
// replacement appears within --release-grace (10s in this suite), the group
// ends Failed, after first saying that it waits for one.
func TestGangFailsWithoutReplacement(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "doomed", 2)
	for i := range 2 {
		createPod(t, ctx, newPod(ns, fmt.Sprintf("w-%d", i), podOpts{group: "doomed", runFor: "1s", exitCode: 3}))
	}
	waitFor(t, ctx, "the group to wait for a replacement", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "doomed")
		if err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "WaitingForReplacement", nil
	})
	pg := waitGroupFinished(t, ctx, ns, "doomed")
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionFinished)
	if c.Reason != v1alpha1.ReasonFailed || pg.Status.Phase != v1alpha1.PodGroupFailed || pg.Status.Failed != 2 || pg.Status.CompletionTime == nil {
		t.Errorf("Finished=%s/%s phase=%s failed=%d completionTime=%v, want Failed, Failed, 2 and set",
			c.Status, c.Reason, pg.Status.Phase, pg.Status.Failed, pg.Status.CompletionTime)
	}
	expectNoFinalizers(t, ctx, ns)
}
