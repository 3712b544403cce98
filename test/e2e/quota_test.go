package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const podGroupCount = corev1.ResourceName("count/podgroups.scheduling.muster.dev")

// quotaUsed returns the quota's recorded usage of podgroups, and whether
// any is recorded.
func quotaUsed(ctx context.Context, ns, name string) (int64, bool) {
	q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, false
	}
	used, ok := q.Status.Used[podGroupCount]
	return used.Value(), ok
}

// nudger returns a function that, at most every 5 seconds, changes the
// quota's hard limit and back, which has the resource quota controller
// recount it at once rather than at its next full resync.
func nudger(t *testing.T, ns, name string) func(context.Context) error {
	var last time.Time
	return func(ctx context.Context) error {
		if time.Since(last) < 5*time.Second {
			return nil
		}
		last = time.Now()
		t.Logf("asking the resource quota controller to recount quota %s", name)
		for _, hard := range []string{"2", "1"} {
			patch := fmt.Appendf(nil, `{"spec":{"hard":{%q:%q}}}`, podGroupCount, hard)
			if _, err := kube.CoreV1().ResourceQuotas(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestResourceQuotaCountsPodGroups (issue 9 item 9): Muster's server
// enforces ResourceQuota count/podgroups.scheduling.muster.dev as
// kube-apiserver enforces counts of its own resources, next to the real
// resource quota controller of kube-controller-manager, which counts
// PodGroups through Muster's API: a create within the quota is recorded in
// its usage, a create beyond it is Forbidden, naming the quota and the
// resource, and a deleted group gives its place back once the controller
// recounts.
func TestResourceQuotaCountsPodGroups(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	if _, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "groups"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{podGroupCount: resource.MustParse("1")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-controller-manager's quota controller finds Muster's resources
	// by discovery every 30s, and recounts a quota every 5 minutes, when a
	// counted object goes, or when the quota's hard limits change: a quota
	// made before it found PodGroups shows no usage for them, and admission
	// refuses every create until it does. Changing the limit and back has it
	// count again.
	recount := nudger(t, ns, "groups")
	waitFor(t, ctx, "the resource quota controller to count the namespace's PodGroups", func(ctx context.Context) (bool, error) {
		if used, ok := quotaUsed(ctx, ns, "groups"); ok {
			return used == 0, nil
		}
		return false, recount(ctx)
	})
	// Until Muster's quota informer sees the counted quota, it admits
	// nothing: a dry run tells when it does.
	waitFor(t, ctx, "a dry-run create to pass the counted quota", func(ctx context.Context) (bool, error) {
		_, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "probe", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "first", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create within the quota: %v", err)
	}
	if used, _ := quotaUsed(ctx, ns, "groups"); used != 1 {
		t.Errorf("quota usage after one create = %d, want 1", used)
	}
	_, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "over", 1), metav1.CreateOptions{})
	if !isForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: groups") || !strings.Contains(err.Error(), string(podGroupCount)) {
		t.Fatalf("create over a full quota: %v; want Forbidden naming quota groups and %s", err, podGroupCount)
	}

	// A deletion gives the place back once the controller recounts.
	if err := muster.SchedulingV1alpha1().PodGroups(ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the deleted group to be gone", func(ctx context.Context) (bool, error) {
		_, err := getGroup(ctx, ns, "first")
		return isNotFound(err), nil
	})
	waitFor(t, ctx, "a create to pass once the deleted group is no longer counted", func(ctx context.Context) (bool, error) {
		_, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "again", 1), metav1.CreateOptions{})
		if err == nil {
			return true, nil
		}
		if used, _ := quotaUsed(ctx, ns, "groups"); used > 0 {
			return false, recount(ctx)
		}
		return false, nil
	})
}
