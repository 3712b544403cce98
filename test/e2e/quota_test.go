package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const podGroupCount = corev1.ResourceName("count/podgroups.scheduling.muster.dev")

// setQuotaStatus writes a quota's status as the cluster's resource quota
// controller (kube-controller-manager, which this test cluster does not
// run) would: hard from the spec, and the usage it counted.
func setQuotaStatus(t *testing.T, ctx context.Context, q *corev1.ResourceQuota, used int64) *corev1.ResourceQuota {
	t.Helper()
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{podGroupCount: *resource.NewQuantity(used, resource.DecimalSI)}}
	q, err := kube.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing the quota's status: %v", err)
	}
	return q
}

// TestResourceQuotaCountsPodGroups (issue 9 item 9): Muster's server
// enforces ResourceQuota count/podgroups.scheduling.muster.dev as
// kube-apiserver enforces counts of its own resources: a create beyond the
// quota is Forbidden, naming the quota and the resource, and an admitted
// create is recorded in the quota's usage.
func TestResourceQuotaCountsPodGroups(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	q, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "groups"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{podGroupCount: resource.MustParse("1")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q = setQuotaStatus(t, ctx, q, 1)
	// Until Muster's quota informer sees the full quota, a dry run passes.
	var refused error
	waitFor(t, ctx, "a dry-run create to be refused by the full quota", func(ctx context.Context) (bool, error) {
		_, refused = muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "probe", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return refused != nil, nil
	})
	_, err = muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "over", 1), metav1.CreateOptions{})
	if !isForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: groups") || !strings.Contains(err.Error(), string(podGroupCount)) {
		t.Fatalf("create over a full quota: %v; want Forbidden naming quota groups and %s", err, podGroupCount)
	}

	// The quota controller recounts: none exists. One create goes in and is
	// counted; the next is refused.
	setQuotaStatus(t, ctx, q, 0)
	waitFor(t, ctx, "a dry-run create to pass the recounted quota", func(ctx context.Context) (bool, error) {
		_, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "probe", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "first", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create within the quota: %v", err)
	}
	got, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, "groups", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[podGroupCount]; used.Value() != 1 {
		t.Errorf("quota usage after one create = %s, want 1", used.String())
	}
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "second", 1), metav1.CreateOptions{}); !isForbidden(err) {
		t.Errorf("second create with a quota of 1: %v, want Forbidden", err)
	}
}
