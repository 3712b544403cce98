package cluster

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// newProvisioningRequest is a ProvisioningRequest of class with one pod set
// per count, each referencing the PodTemplate "<name>-<i>".
func newProvisioningRequest(name, class string, counts ...int64) *unstructured.Unstructured {
	sets := make([]interface{}, len(counts))
	for i, n := range counts {
		sets[i] = map[string]interface{}{
			"podTemplateRef": map[string]interface{}{"name": name + "-" + string(rune('0'+i%10))},
			"count":          n,
		}
	}
	spec := map[string]interface{}{"podSets": sets}
	if class != "" {
		spec["provisioningClassName"] = class
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"spec": spec}}
	u.SetAPIVersion("autoscaling.x-k8s.io/v1")
	u.SetKind("ProvisioningRequest")
	u.SetName(name)
	return u
}

// TestProvisioningRequestCRD: with Options.ProvisioningRequestCRD the
// cluster serves autoscaling.x-k8s.io/v1 provisioningrequests with a status
// subresource; the schema rejects what the API does, the spec is immutable,
// and a test sets conditions as cluster-autoscaler would.
func TestProvisioningRequestCRD(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane; skipped with -short")
	}
	c := StartForTest(t, Options{Nodes: 1, ProvisioningRequestCRD: true})
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatalf("creating dynamic client: %v", err)
	}
	ns := createNamespace(t, c, "provreq")
	const class = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"

	resources, err := c.Client.Discovery().ServerResourcesForGroupVersion("autoscaling.x-k8s.io/v1")
	if err != nil {
		t.Fatalf("discovering autoscaling.x-k8s.io/v1: %v", err)
	}
	var served []string
	for _, r := range resources.APIResources {
		served = append(served, r.Name)
	}
	for _, want := range []string{"provisioningrequests", "provisioningrequests/status"} {
		if !slices.Contains(served, want) {
			t.Errorf("autoscaling.x-k8s.io/v1 serves %v, want %s", served, want)
		}
	}

	prs := dyn.Resource(ProvisioningRequestResource).Namespace(ns)
	t.Run("the schema rejects what the API does", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			pr   *unstructured.Unstructured
		}{
			{"no class", newProvisioningRequest("no-class", "", 1)},
			{"no pod set", newProvisioningRequest("no-sets", class)},
			{"more than 32 pod sets", newProvisioningRequest("many-sets", class, make([]int64, 33)...)},
			{"a pod set of no pod", newProvisioningRequest("no-pods", class, 0)},
		} {
			if _, err := prs.Create(ctx, tc.pr, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
				t.Errorf("%s: create returned %v, want Invalid", tc.name, err)
			}
		}
	})

	tmpl := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "pr-0"},
		Template:   corev1.PodTemplateSpec{Spec: newPod("t", nil).Spec},
	}
	if _, err := c.Client.CoreV1().PodTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodTemplate: %v", err)
	}
	pr, err := prs.Create(ctx, newProvisioningRequest("pr", class, 4), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ProvisioningRequest: %v", err)
	}

	t.Run("the spec is immutable", func(t *testing.T) {
		changed := pr.DeepCopy()
		if err := unstructured.SetNestedField(changed.Object, "other.autoscaling.x-k8s.io", "spec", "provisioningClassName"); err != nil {
			t.Fatal(err)
		}
		if _, err := prs.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("update of the spec returned %v, want Invalid", err)
		}
	})

	t.Run("conditions are set through the status subresource only", func(t *testing.T) {
		withStatus := pr.DeepCopy()
		if err := unstructured.SetNestedSlice(withStatus.Object, []interface{}{map[string]interface{}{
			"type": "Provisioned", "status": "True", "reason": "Provisioned", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z",
		}}, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		got, err := prs.Update(ctx, withStatus, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("updating ProvisioningRequest: %v", err)
		}
		if _, found, _ := unstructured.NestedSlice(got.Object, "status", "conditions"); found {
			t.Errorf("an update of the main resource set status: %v", got.Object["status"])
		}

		for _, cond := range []metav1.Condition{
			{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "accepted"},
			{Type: "Provisioned", Status: metav1.ConditionFalse, Reason: "Pending", Message: "scaling up"},
			{Type: "Provisioned", Status: metav1.ConditionTrue, Reason: "Provisioned", Message: "capacity is ready"},
		} {
			if err := SetProvisioningRequestCondition(ctx, dyn, ns, "pr", cond); err != nil {
				t.Fatalf("setting %s=%s: %v", cond.Type, cond.Status, err)
			}
		}
		got, err = prs.Get(ctx, "pr", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		have := map[string]string{}
		for _, c := range conds {
			m := c.(map[string]interface{})
			have[m["type"].(string)] = m["status"].(string) + "/" + m["message"].(string)
		}
		want := map[string]string{"Accepted": "True/accepted", "Provisioned": "True/capacity is ready"}
		if len(have) != len(want) || have["Accepted"] != want["Accepted"] || have["Provisioned"] != want["Provisioned"] {
			t.Errorf("conditions %v, want %v", have, want)
		}
	})

	t.Run("a condition with an invalid reason is rejected", func(t *testing.T) {
		err := SetProvisioningRequestCondition(ctx, dyn, ns, "pr", metav1.Condition{Type: "Failed", Status: metav1.ConditionTrue, Reason: "not a reason"})
		if !apierrors.IsInvalid(err) {
			t.Errorf("setting a condition with reason %q returned %v, want Invalid", "not a reason", err)
		}
	})
}
