package abuse

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The hostile tenant: a user whose only right is pods in one namespace.
const malloryUser = "mallory"

// Mallory's ResourceQuota: what a cluster that shares nodes between
// tenants gives each one. Muster must hold a tenant to it even for pods
// that do not exist yet (reserved places), and groups count against it.
// criticalQuota names mallory's quota that allows no pod of a critical
// PriorityClass.
const criticalQuota = "no-critical-priority"

var malloryQuota = corev1.ResourceList{
	corev1.ResourceRequestsCPU:              resource.MustParse("16"),
	corev1.ResourcePods:                     resource.MustParse("400"),
	"count/podgroups.scheduling.muster.dev": resource.MustParse("60"),
}

// tenant is one namespace and the client that acts in it.
type tenant struct {
	ns     string
	client kubernetes.Interface
	// loose is mallory's second namespace: the same Role and quota of cpu
	// and pods, and no quota on PodGroups, so that what Muster's own
	// bounds on groups made from pods hold is tried at their defaults.
	loose string
}

// newNamespace creates a namespace for the suite, deleted when it ends.
func newNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	return env.NewNamespace(t, ctx, fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%100000))
}

// wellBehaved is the tenant whose gangs the suite times; it acts as the
// cluster's admin, so that nothing but mallory can slow it.
func wellBehaved(t *testing.T, ctx context.Context) tenant {
	return tenant{ns: newNamespace(t, ctx, "good"), client: kube}
}

// mallory is the hostile tenant: a namespace under malloryQuota, and a
// client that impersonates malloryUser, bound to a Role that grants pods
// and nothing else.
func mallory(t *testing.T, ctx context.Context) tenant {
	t.Helper()
	ns := newNamespace(t, ctx, "mallory")
	quota := podsOnly(t, ctx, ns, malloryQuota)
	loose := newNamespace(t, ctx, "mallory-loose")
	looseQuota := malloryQuota.DeepCopy()
	delete(looseQuota, "count/podgroups.scheduling.muster.dev")
	podsOnly(t, ctx, loose, looseQuota)
	// A gang's priority is its pods' (docs/controller.md, "Gang
	// preemption"), and a gang preempts gangs of lower priority in any
	// namespace: so a cluster that shares its nodes polices which
	// PriorityClasses a tenant may use, with a ResourceQuota scope, as it
	// must for kube-scheduler's own preemption.
	critical := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: criticalQuota, Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
				ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn,
				Values: []string{"system-cluster-critical", "system-node-critical"},
			}}},
		},
	}
	if _, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, critical, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.Impersonate = rest.ImpersonationConfig{UserName: malloryUser}
	client := kubernetes.NewForConfigOrDie(cfg)
	// The quota controller fills the quota's usage of each resource before
	// the quota admits any of it. It finds PodGroups by discovery every
	// 30s, and recounts a quota whose limits change: a quota made before it
	// found them shows no usage for them until then, so the wait nudges it
	// by changing the group limit and back, as an operator would.
	groups := corev1.ResourceName("count/podgroups.scheduling.muster.dev")
	nudge := 0
	if err := waitUntil(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for name := range quota.Spec.Hard {
			if _, ok := q.Status.Used[name]; !ok {
				limit := malloryQuota[groups]
				if nudge++; nudge%2 == 1 {
					limit.Add(resource.MustParse("1"))
				}
				patch := fmt.Appendf(nil, `{"spec":{"hard":{%q:%q}}}`, groups, limit.String())
				_, err := kube.CoreV1().ResourceQuotas(ns).Patch(ctx, quota.Name, types.MergePatchType, patch, metav1.PatchOptions{})
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("quota %s/%s never got its status: %v", ns, quota.Name, err)
	}
	if err := waitUntil(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		q, err := kube.CoreV1().ResourceQuotas(loose).Get(ctx, quota.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, ok := q.Status.Used[corev1.ResourcePods]
		return ok, nil
	}); err != nil {
		t.Fatalf("quota %s/%s never got its status: %v", loose, quota.Name, err)
	}
	// Mallory may create pods, and nothing else.
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("mallory created a ConfigMap (err %v): the Role grants more than pods", err)
	}
	return tenant{ns: ns, client: client, loose: loose}
}

// podsOnly grants malloryUser pods, and nothing else, in ns, under a
// ResourceQuota of hard, which it returns.
func podsOnly(t *testing.T, ctx context.Context, ns string, hard corev1.ResourceList) *corev1.ResourceQuota {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pods-only", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"pods"},
			Verbs:     []string{"create", "get", "list", "watch", "update", "patch", "delete", "deletecollection"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pods-only", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: malloryUser}},
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return quota
}
