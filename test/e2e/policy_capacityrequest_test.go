package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/manifests"
)

// createAs creates p as client; a dry run unless real.
func createAs(client kubernetes.Interface, p *corev1.Pod, real bool) func(ctx context.Context, _ []string) error {
	return func(ctx context.Context, _ []string) error {
		opts := metav1.CreateOptions{}
		if !real {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, opts)
		return err
	}
}

// TestPolicyMusterCapacityRequestPods: as its service account, Muster's
// controller may create a capacity-request pod as the controller builds it
// (RBAC grants create; the PriorityClass it names is installed) and delete
// it unmarked. muster-pod-creates denies any other pod it creates, naming
// the field; an administrator is not confined. A tenant's pod with the
// label and the class, not owned by the PodGroup, it may not delete
// unmarked.
func TestPolicyMusterCapacityRequestPods(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	muster := env.ImpersonatingClient(musterUser())
	createGroup(t, ctx, ns, "train", 2)
	pg, err := getGroup(ctx, ns, "train")
	if err != nil {
		t.Fatal(err)
	}
	capacityRequest := func(change func(*corev1.Pod)) *corev1.Pod {
		member := newPod(ns, "member", podOpts{group: "train", labels: map[string]string{"app": "trainer"}})
		tmpl := autoscaling.CapacityRequestTemplate(member, pg.Name, scheduling.DefaultCapacityRequestImage)
		p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
		p.Name, p.Namespace = "train-cr-0123456789-0", ns
		p.OwnerReferences = []metav1.OwnerReference{autoscaling.OwnerReference(autoscaling.Demand{Namespace: ns, Name: pg.Name, UID: pg.UID})}
		if change != nil {
			change(p)
		}
		return p
	}

	denied := []struct {
		name, field string
		pod         *corev1.Pod
	}{
		{"an ordinary pod", "metadata.labels[" + scheduling.CapacityRequestLabel + "]", newPod(ns, "plain", podOpts{})},
		{"another image", "spec.containers[0].image", capacityRequest(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox" })},
		{"the host network", "spec.hostNetwork", capacityRequest(func(p *corev1.Pod) { p.Spec.HostNetwork = true })},
		{"a hostPath volume", "spec.volumes", capacityRequest(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		})},
		{"no priority class", "spec.priorityClassName", capacityRequest(func(p *corev1.Pod) { p.Spec.PriorityClassName = "" })},
	}
	for i, d := range denied {
		var err error
		if i == 0 {
			// Until kube-apiserver has loaded the policy.
			err = waitPolicyDenies(t, ctx, manifests.CreatesPolicyName, createAs(muster, d.pod, false))
		} else {
			err = createAs(muster, d.pod, false)(ctx, nil)
		}
		if err == nil || !strings.Contains(err.Error(), policyDenial(manifests.CreatesPolicyName)) {
			t.Errorf("Muster creating %s: got %v, want a denial by %s", d.name, err, manifests.CreatesPolicyName)
			continue
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), d.field+": Forbidden") {
			t.Errorf("Muster creating %s: denial %q is not Forbidden on %s", d.name, err, d.field)
		}
	}
	// An administrator is not confined.
	if err := createAs(kube, newPod(ns, "plain", podOpts{}), false)(ctx, nil); err != nil {
		t.Errorf("an administrator creating an ordinary pod (dry run): %v", err)
	}

	cr := capacityRequest(nil)
	if err := createAs(muster, cr, true)(ctx, nil); err != nil {
		t.Fatalf("Muster creating a capacity-request pod: %v", err)
	}
	created, err := kube.CoreV1().Pods(ns).Get(ctx, cr.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Priority == nil || *created.Spec.Priority != scheduling.CapacityRequestPriority ||
		created.Spec.PreemptionPolicy == nil || *created.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("the capacity-request pod has priority %v and preemptionPolicy %v, want %d and Never from %s",
			created.Spec.Priority, created.Spec.PreemptionPolicy, scheduling.CapacityRequestPriority, scheduling.CapacityRequestPriorityClass)
	}
	// No tenant creates a pod of the capacity-request class, even one its
	// own PodGroup controls as Muster's are (issue 34, item 8): Muster
	// never preempts such pods. (Administrators may: TestUninstall does.)
	classed := newPod(ns, "classed", podOpts{labels: map[string]string{scheduling.CapacityRequestLabel: pg.Name}})
	classed.Spec.PriorityClassName = scheduling.CapacityRequestPriorityClass
	classed.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup", Name: pg.Name, UID: pg.UID, Controller: ptr.To(true)}}
	tenant := tenantClient(t, ctx, ns)
	err = waitPolicyDenies(t, ctx, manifests.RequestClassPolicyName, func(ctx context.Context, dryRun []string) error {
		_, err := tenant.CoreV1().Pods(ns).Create(ctx, classed, metav1.CreateOptions{DryRun: dryRun})
		return err
	})
	expectDenial(t, err, manifests.RequestClassPolicyName, "spec.priorityClassName")
	// A tenant's pod that carries the label but is not a capacity request
	// as Muster makes them: Muster may not delete it unmarked.
	lookalike := newPod(ns, "lookalike", podOpts{labels: map[string]string{scheduling.CapacityRequestLabel: pg.Name}})
	lookalike, err = kube.CoreV1().Pods(ns).Create(ctx, lookalike, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a tenant creating a pod with the capacity-request label: %v", err)
	}
	err = deletePod(muster, lookalike, false)(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), policyDenial(manifests.WritesPolicyName)) || !strings.Contains(err.Error(), "status.conditions: Forbidden") {
		t.Errorf("Muster deleting a tenant's pod that only looks like a capacity request: got %v, want a denial by %s on status.conditions", err, manifests.WritesPolicyName)
	}
	if err := deletePod(muster, created, true)(ctx, nil); err != nil {
		t.Errorf("Muster deleting its capacity-request pod, unmarked: %v", err)
	}
}

// tenantClient is a client for a user who may edit namespace ns (the
// ClusterRole edit, bound there), as a tenant would.
func tenantClient(t *testing.T, ctx context.Context, ns string) kubernetes.Interface {
	t.Helper()
	return env.ImpersonatingClient(editor(t, ctx, ns))
}

// editor is a user bound to the built-in edit role in ns alone.
func editor(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	user := "tenant-" + ns
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's authorizer reads RoleBindings from its informer, a
	// moment behind the create; and muster-apiserver, which asks it, caches
	// a denial for 10 s. So the grant is waited for here, at kube-apiserver,
	// before the user makes a request of either.
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"},
	}}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	}); err != nil {
		t.Fatalf("the edit grant to %s in %s never took effect: %v", user, ns, err)
	}
	return user
}
