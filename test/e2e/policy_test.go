package e2e

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/test/cluster"
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
			err := waitPolicyDenies(t, ctx, manifests.LabelsPolicyName, tt.write)
			if err == nil || !strings.Contains(err.Error(), policyDenial(manifests.LabelsPolicyName)) {
				t.Fatalf("changing the group label: got %v, want a denial by %s", err, manifests.LabelsPolicyName)
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
		// Only in the write that takes its finalizer off (allowed below).
		{"the counted label alone", `{"metadata":{"labels":{"` + scheduling.CountedLabel + `":"Succeeded.x"}}}`, "metadata.labels"},
	}
	for i, tt := range denied {
		t.Run("denied "+tt.name, func(t *testing.T) {
			write := patch(muster, types.StrategicMergePatchType, tt.patch)
			var err error
			if i == 0 {
				err = waitPolicyDenies(t, ctx, manifests.WritesPolicyName, write)
			} else {
				err = write(ctx, nil)
			}
			if err == nil || !strings.Contains(err.Error(), policyDenial(manifests.WritesPolicyName)) {
				t.Fatalf("Muster changing %s: got %v, want a denial by %s", tt.name, err, manifests.WritesPolicyName)
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.field+": Forbidden") {
				t.Errorf("denial %q is not Forbidden on %s", err, tt.field)
			}
			// The same write by an administrator passes the policy.
			if err := patch(kube, types.StrategicMergePatchType, tt.patch)(ctx, nil); err != nil && strings.Contains(err.Error(), manifests.WritesPolicyName) {
				t.Errorf("the policy denies an administrator too: %v", err)
			}
		})
	}

	allowed := []struct{ name, patch string }{
		{"removing its gate and pinning to a node", `[{"op":"replace","path":"/spec/schedulingGates","value":[]},` +
			`{"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
			`{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-0"]}]}]}}}}]`},
		{"removing its finalizer", `[{"op":"replace","path":"/metadata/finalizers","value":[]}]`},
		{"removing its finalizer and labelling the pod counted", `[{"op":"replace","path":"/metadata/finalizers","value":[]},` +
			`{"op":"add","path":"/metadata/labels/scheduling.muster.dev~1counted","value":"Succeeded.x"}]`},
	}
	for _, tt := range allowed {
		t.Run("allowed "+tt.name, func(t *testing.T) {
			if err := patch(muster, types.JSONPatchType, tt.patch)(ctx, nil); err != nil {
				t.Errorf("Muster %s: %v", tt.name, err)
			}
		})
	}

	// Adoption: Muster puts its finalizer back on a labelled pod that has not
	// ended and lacks it. (Before issue 21 this was an unlabelled pod; Muster
	// may no longer add its finalizer to a pod it does not manage, which
	// TestPolicyMusterConfinedToManagedPods checks.)
	untracked := createPod(t, ctx, newPod(ns, "untracked", podOpts{group: "g"}))
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, untracked.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the finalizer as an administrator: %v", err)
	}
	adopt := []byte(`{"metadata":{"finalizers":["` + scheduling.TrackingFinalizer + `"]}}`)
	if _, err := muster.CoreV1().Pods(ns).Patch(ctx, untracked.Name, types.MergePatchType, adopt, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("Muster adding its finalizer: %v", err)
	}
}

// expectDenial fails the test unless err is policy's Forbidden denial of a
// write to field.
func expectDenial(t *testing.T, err error, policy, field string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), policyDenial(policy)) {
		t.Fatalf("got %v, want a denial by %s", err, policy)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), field+": Forbidden") {
		t.Errorf("denial %q is not Forbidden on %s", err, field)
	}
}

// dryRunPatch patches a pod as client in a dry run.
func dryRunPatch(client kubernetes.Interface, ns, name string, pt types.PatchType, body string) func(ctx context.Context, _ []string) error {
	return func(ctx context.Context, _ []string) error {
		_, err := client.CoreV1().Pods(ns).Patch(ctx, name, pt, []byte(body), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
}

// pinPatch pins a pod without required node affinity to node-0, as the
// controller's release patch does.
const pinPatch = `[{"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
	`{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-0"]}]}]}}}}]`

// TestPolicyMusterConfinedToManagedPods (issue 21, item 11): Muster's
// controller may write only the pods it manages, those with the group
// label, and on them only its gate, its finalizer and the pin. As Muster's
// service account, each write below is denied by muster-pod-writes, naming
// the field, in a namespace Muster does not manage as much as in one it
// does; taking its finalizer off any pod still passes.
func TestPolicyMusterConfinedToManagedPods(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	// muster-system: a namespace Muster does not manage, where its webhook
	// and muster-pod-labels never look, but its writes are confined too.
	other := cluster.MusterNamespace
	strange := func(name string, finalizers []string, gates ...string) *corev1.Pod {
		p := newPod(other, name+"-"+ns, podOpts{})
		p.Finalizers = finalizers
		for _, g := range gates {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
		}
		p = createPod(t, ctx, p)
		t.Cleanup(func() {
			ctx := context.Background()
			_, _ = kube.CoreV1().Pods(other).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = kube.CoreV1().Pods(other).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrInt64(0)})
		})
		return p
	}
	held := strange("held", nil, "example.com/hold")
	gated := strange("gated", nil, scheduling.AdmissionGate)
	tracked := strange("tracked", []string{scheduling.TrackingFinalizer}, "example.com/hold")
	managed := createPod(t, ctx, newPod(ns, "managed", podOpts{group: "g"}))
	muster := env.ImpersonatingClient(musterUser())

	denied := []struct {
		name, ns, pod string
		pt            types.PatchType
		patch, field  string
	}{
		{"its finalizer on an unlabelled pod in another namespace", other, held.Name, types.MergePatchType,
			`{"metadata":{"finalizers":["` + scheduling.TrackingFinalizer + `"]}}`, "metadata.finalizers"},
		{"a pin on a gated pod it does not manage", other, held.Name, types.JSONPatchType, pinPatch,
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"},
		{"its gate off a pod it does not manage", other, gated.Name, types.JSONPatchType,
			`[{"op":"replace","path":"/spec/schedulingGates","value":[]}]`, "spec.schedulingGates"},
		{"the active deadline of a pod it manages", ns, managed.Name, types.MergePatchType,
			`{"spec":{"activeDeadlineSeconds":60}}`, "spec.activeDeadlineSeconds"},
		{"the tolerations of a pod it manages", ns, managed.Name, types.StrategicMergePatchType,
			`{"spec":{"tolerations":[{"key":"example.com/x","operator":"Exists"}]}}`, "spec.tolerations"},
	}
	for i, tt := range denied {
		t.Run("denied "+tt.name, func(t *testing.T) {
			write := dryRunPatch(muster, tt.ns, tt.pod, tt.pt, tt.patch)
			var err error
			if i == 0 {
				err = waitPolicyDenies(t, ctx, manifests.WritesPolicyName, write)
			} else {
				err = write(ctx, nil)
			}
			expectDenial(t, err, manifests.WritesPolicyName, tt.field)
			// An administrator is not confined.
			if err := dryRunPatch(kube, tt.ns, tt.pod, tt.pt, tt.patch)(ctx, nil); err != nil && strings.Contains(err.Error(), manifests.WritesPolicyName) {
				t.Errorf("the policy denies an administrator too: %v", err)
			}
		})
	}
	t.Run("allowed its finalizer off a pod it does not manage", func(t *testing.T) {
		if err := dryRunPatch(muster, other, tracked.Name, types.JSONPatchType, `[{"op":"replace","path":"/metadata/finalizers","value":[]}]`)(ctx, nil); err != nil {
			t.Errorf("Muster removing its finalizer: %v", err)
		}
	})
}

// TestPolicyConfinementFollowsTheRole (issue 21, item 11): the policies
// find Muster by the permission its ClusterRole grants, not by a user name,
// so a service account of another name in another namespace, bound to that
// role as a renamed install would be, is confined just the same.
func TestPolicyConfinementFollowsTheRole(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "renamed-muster", Namespace: ns}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-renamed-muster"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.MusterService},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	pod := createPod(t, ctx, newPod(ns, "p", podOpts{group: "g"}))
	renamed := env.ImpersonatingClient("system:serviceaccount:" + ns + ":" + sa.Name)

	err := waitPolicyDenies(t, ctx, manifests.WritesPolicyName, dryRunPatch(renamed, ns, pod.Name, types.MergePatchType, `{"metadata":{"labels":{"team":"x"}}}`))
	expectDenial(t, err, manifests.WritesPolicyName, "metadata.labels")
	if err := dryRunPatch(renamed, ns, pod.Name, types.JSONPatchType, `[{"op":"replace","path":"/spec/schedulingGates","value":[]}]`)(ctx, nil); err != nil {
		t.Errorf("the renamed account removing Muster's gate: %v", err)
	}
}

// TestPolicyMusterQuotaWritesConfined (issue 21, item 11): Muster's
// controller may change a ResourceQuota only as its quota admission plugin
// does, the usage of the PodGroup and Workload counts in the quota's
// status; the usage of another resource and the hard limits are denied by
// muster-quota-writes, naming the field.
func TestPolicyMusterQuotaWritesConfined(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), podGroupCount: resource.MustParse("5")}},
	}
	if _, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the resource quota controller to count pods", func(ctx context.Context) (bool, error) {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{})
		_, counted := q.Status.Used[corev1.ResourcePods]
		return err == nil && counted, nil
	})
	muster := env.ImpersonatingClient(musterUser())
	// writeStatus changes a fresh copy of the quota's status as Muster, in a
	// dry run, again while the quota controller's own writes conflict.
	writeStatus := func(change func(*corev1.ResourceQuota)) func(ctx context.Context, _ []string) error {
		return func(ctx context.Context, _ []string) error {
			for {
				q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				change(q)
				_, err = muster.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
				if !apierrors.IsConflict(err) || ctx.Err() != nil {
					return err
				}
			}
		}
	}
	set := func(list func(*corev1.ResourceQuota) corev1.ResourceList, name corev1.ResourceName, v string) func(*corev1.ResourceQuota) {
		// The quota controller has filled both lists (waited for above).
		return func(q *corev1.ResourceQuota) { list(q)[name] = resource.MustParse(v) }
	}
	used := func(q *corev1.ResourceQuota) corev1.ResourceList { return q.Status.Used }
	hard := func(q *corev1.ResourceQuota) corev1.ResourceList { return q.Status.Hard }

	err := waitPolicyDenies(t, ctx, manifests.QuotaWritesPolicyName, writeStatus(set(used, corev1.ResourcePods, "9")))
	expectDenial(t, err, manifests.QuotaWritesPolicyName, "status.used")
	expectDenial(t, writeStatus(set(hard, podGroupCount, "50"))(ctx, nil), manifests.QuotaWritesPolicyName, "status.hard")
	if err := writeStatus(set(used, podGroupCount, "1"))(ctx, nil); err != nil {
		t.Errorf("Muster recording the usage of %s: %v", podGroupCount, err)
	}
}

// TestPolicyFinalizerNotPutBack (issue 21, item 7): a pod's end is counted
// once. Nobody, an administrator included, may put the tracking finalizer
// back on a pod that lost it, and Muster's controller only on a pod that
// has not ended (adoption); muster-pod-labels denies the rest, naming the
// field, and the group's count does not move.
func TestPolicyFinalizerNotPutBack(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "g", 1)
	done := createPod(t, ctx, newPod(ns, "done", podOpts{group: "g", runFor: "1s"}))
	waitFor(t, ctx, "the pod to end and be counted", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, done.Name, metav1.GetOptions{})
		return err == nil && scheduling.IsTerminal(p) && !scheduling.HasTrackingFinalizer(p), nil
	})
	waiting := createPod(t, ctx, newPod(ns, "waiting", podOpts{group: "never-created"}))
	if _, err := kube.CoreV1().Pods(ns).Patch(ctx, waiting.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the finalizer as an administrator: %v", err)
	}
	pg, err := getGroup(ctx, ns, "g")
	if err != nil {
		t.Fatal(err)
	}
	succeeded := pg.Status.Succeeded
	muster := env.ImpersonatingClient(musterUser())
	putBack := `{"metadata":{"finalizers":["` + scheduling.TrackingFinalizer + `"]}}`

	denied := []struct {
		name   string
		client kubernetes.Interface
		pod    string
		policy string
	}{
		{"a user, on the pod that ended", kube, done.Name, manifests.LabelsPolicyName},
		{"a user, on a pod that waits", kube, waiting.Name, manifests.LabelsPolicyName},
		{"Muster, on the pod that ended", muster, done.Name, ""},
	}
	for i, tt := range denied {
		t.Run("denied "+tt.name, func(t *testing.T) {
			write := dryRunPatch(tt.client, ns, tt.pod, types.MergePatchType, putBack)
			var err error
			if i == 0 {
				err = waitPolicyDenies(t, ctx, manifests.LabelsPolicyName, write)
			} else {
				err = write(ctx, nil)
			}
			policy := tt.policy
			if policy == "" && err != nil && strings.Contains(err.Error(), policyDenial(manifests.WritesPolicyName)) {
				// Both policies deny Muster here; either may answer first.
				policy = manifests.WritesPolicyName
			} else if policy == "" {
				policy = manifests.LabelsPolicyName
			}
			expectDenial(t, err, policy, "metadata.finalizers")
		})
	}
	t.Run("allowed Muster, on a pod that waits", func(t *testing.T) {
		if err := dryRunPatch(muster, ns, waiting.Name, types.MergePatchType, putBack)(ctx, nil); err != nil {
			t.Errorf("Muster adopting a pod that waits: %v", err)
		}
	})
	if pg, err := getGroup(ctx, ns, "g"); err != nil {
		t.Error(err)
	} else if pg.Status.Succeeded != succeeded {
		t.Errorf("group g counts %d succeeded pods, want %d as before", pg.Status.Succeeded, succeeded)
	}
}

// TestPolicyExpressionsTypeCheck: kube-apiserver type-checks every
// expression of Muster's policies against the pod and ResourceQuota schemas
// and reports none wrong. A field misspelt in CEL is only a warning in the
// policy's status, and an error, so a denial, on each request it reaches.
func TestPolicyExpressionsTypeCheck(t *testing.T) {
	ctx := testContext(t, time.Minute)
	for _, name := range []string{manifests.LabelsPolicyName, manifests.WritesPolicyName, manifests.CreatesPolicyName, manifests.QuotaWritesPolicyName, manifests.ConfigWritesPolicyName, manifests.RequestClassPolicyName} {
		waitFor(t, ctx, "policy "+name+" to be type-checked", func(ctx context.Context) (bool, error) {
			p, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.ObservedGeneration != p.Generation {
				return false, nil
			}
			if p.Status.TypeChecking != nil {
				for _, w := range p.Status.TypeChecking.ExpressionWarnings {
					t.Errorf("policy %s, %s: %s", name, w.FieldRef, w.Warning)
				}
			}
			return true, nil
		})
	}
}

// TestPolicyCountedLabelIsMusters: no one but Muster's controller may set
// scheduling.muster.dev/counted, at a pod's creation or later: it tells
// the controller which ends it counted, and recounts them after a restore
// of its etcd (docs/etcd.md).
func TestPolicyCountedLabelIsMusters(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	pod := createPod(t, ctx, newPod(ns, "p", podOpts{group: "g"}))
	field := "metadata.labels[" + scheduling.CountedLabel + "]: Forbidden"
	forged := newPod(ns, "forged", podOpts{group: "g", labels: map[string]string{scheduling.CountedLabel: "Succeeded.x"}})
	for name, write := range map[string]func(ctx context.Context, dryRun []string) error{
		"at creation": func(ctx context.Context, dryRun []string) error {
			_, err := kube.CoreV1().Pods(ns).Create(ctx, forged, metav1.CreateOptions{DryRun: dryRun})
			return err
		},
		"on an existing pod": func(ctx context.Context, dryRun []string) error {
			patch := []byte(`{"metadata":{"labels":{"` + scheduling.CountedLabel + `":"Succeeded.x"}}}`)
			_, err := kube.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{DryRun: dryRun})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := waitPolicyDenies(t, ctx, manifests.LabelsPolicyName, write)
			if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), field) {
				t.Fatalf("setting %s %s: got %v, want Forbidden by %s naming %s", scheduling.CountedLabel, name, err, manifests.LabelsPolicyName, field)
			}
		})
	}
}

// TestPolicyMusterConfigWritesConfined (issue 34, item 9): Muster's
// credentials may update its webhook configurations and its APIService,
// which RBAC grants whole, only to publish its CA bundle;
// muster-config-writes denies any other change, naming the field.
func TestPolicyMusterConfigWritesConfined(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	muster := env.ImpersonatingClient(musterUser())
	mutating := func(change func(*admissionregistrationv1.MutatingWebhookConfiguration)) func(ctx context.Context, _ []string) error {
		return func(ctx context.Context, _ []string) error {
			c, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(c)
			_, err = muster.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	validating := func(change func(*admissionregistrationv1.ValidatingWebhookConfiguration)) func(ctx context.Context, _ []string) error {
		return func(ctx context.Context, _ []string) error {
			c, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(c)
			_, err = muster.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	apiServices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	apiService := func(change func(*unstructured.Unstructured)) func(ctx context.Context, _ []string) error {
		return func(ctx context.Context, _ []string) error {
			o, err := dynamic.NewForConfigOrDie(env.Config).Resource(apiServices).Get(ctx, "v1alpha1."+scheduling.GroupName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(o)
			cfg := rest.CopyConfig(env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: musterUser()}
			_, err = dynamic.NewForConfigOrDie(cfg).Resource(apiServices).Update(ctx, o, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	newBundle := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")

	err := waitPolicyDenies(t, ctx, manifests.ConfigWritesPolicyName, mutating(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
		c.Webhooks[0].Rules[0].Resources = []string{"*"}
	}))
	expectDenial(t, err, manifests.ConfigWritesPolicyName, "webhooks")
	tests := []struct {
		name  string
		write func(ctx context.Context, _ []string) error
		field string // "" when allowed
	}{
		{"the mutating webhook's caBundle may change", mutating(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.CABundle = newBundle
		}), ""},
		{"the mutating webhook may not be sent elsewhere", mutating(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.Service, c.Webhooks[0].ClientConfig.URL = nil, ptr.To("https://attacker.example:443/")
		}), "webhooks"},
		{"the validating webhook may not fail open", validating(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}), "webhooks"},
		{"no webhook may be added", validating(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			w := c.Webhooks[0].DeepCopy()
			w.Name = "secrets." + w.Name
			c.Webhooks = append(c.Webhooks, *w)
		}), "webhooks"},
		{"labels may not change", validating(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels["example.com/x"] = "y"
		}), "metadata.labels"},
		{"the APIService's caBundle may change", apiService(func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, base64.StdEncoding.EncodeToString(newBundle), "spec", "caBundle")
		}), ""},
		{"the APIService may not point at another Service", apiService(func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "kube-system", "spec", "service", "namespace")
		}), "spec"},
		{"the APIService may not skip TLS verification", apiService(func(o *unstructured.Unstructured) {
			unstructured.RemoveNestedField(o.Object, "spec", "caBundle")
			_ = unstructured.SetNestedField(o.Object, true, "spec", "insecureSkipTLSVerify")
		}), "spec.insecureSkipTLSVerify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.write(ctx, nil)
			if tt.field == "" {
				if err != nil {
					t.Errorf("Muster publishing its CA bundle: %v", err)
				}
				return
			}
			expectDenial(t, err, manifests.ConfigWritesPolicyName, tt.field)
		})
	}
}
