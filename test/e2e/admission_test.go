package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// podGroupRule matches the creation of Muster's PodGroups.
var podGroupRule = admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule: admissionregistrationv1.Rule{
		APIGroups:   []string{v1alpha1.GroupName},
		APIVersions: []string{v1alpha1.SchemeGroupVersion.Version},
		Resources:   []string{"podgroups"},
	},
}}

// inNamespace selects only the namespace ns, so a policy stays inside its test.
func inNamespace(ns string) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
	}}
}

// TestMusterAdmissionChain: Muster's own admission chain runs on every
// request through the aggregator, with each plugin the cluster can serve: the
// namespace lifecycle, Muster's Workload reference check, the cluster's
// ValidatingAdmissionPolicies, and its MutatingAdmissionPolicies where the
// cluster serves them. Where it does not, Muster says in its log that the
// plugin is off.
func TestMusterAdmissionChain(t *testing.T) {
	t.Run("NamespaceLifecycle refuses a PodGroup in a missing namespace", func(t *testing.T) {
		ctx := testContext(t, time.Minute)
		missing := fmt.Sprintf("no-such-namespace-%d", time.Now().UnixNano()%100000)
		_, err := muster.SchedulingV1alpha1().PodGroups(missing).Create(ctx, newGroupObject(missing, "g", 1), metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), missing) {
			t.Fatalf("create in a missing namespace: %v, want NotFound naming %s", err, missing)
		}
	})

	t.Run("PodGroupWorkloadExists refuses a reference to a missing Workload", func(t *testing.T) {
		ctx := testContext(t, time.Minute)
		ns := namespace(t, ctx)
		pg := newGroupObject(ns, "orphan", 1)
		pg.Spec.WorkloadRef = &v1alpha1.WorkloadReference{WorkloadName: "absent", TemplateName: "workers"}
		_, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `no Workload named "absent"`) {
			t.Fatalf("create with a missing Workload: %v, want Invalid saying no Workload named \"absent\"", err)
		}
	})

	t.Run("a ValidatingAdmissionPolicy of the cluster applies to PodGroups", func(t *testing.T) {
		ctx := testContext(t, 2*time.Minute)
		ns := namespace(t, ctx)
		name := ns + "-deny"
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy:    ptrTo(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{podGroupRule}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: "!object.metadata.name.startsWith('denied-')",
					Message:    "denied by the test policy",
				}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				MatchResources:    inNamespace(ns),
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}
		vap := kube.AdmissionregistrationV1()
		if _, err := vap.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating policy: %v", err)
		}
		t.Cleanup(func() {
			_ = vap.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = vap.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating binding: %v", err)
		}
		// Muster sees the policy through an informer: retry until it does.
		attempt := 0
		waitFor(t, ctx, "Muster to enforce the policy", func(ctx context.Context) (bool, error) {
			attempt++
			_, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, fmt.Sprintf("denied-%d", attempt), 1), metav1.CreateOptions{})
			if err == nil {
				return false, nil
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "denied by the test policy") {
				return false, fmt.Errorf("create = %v, want Invalid with the policy's message", err)
			}
			return true, nil
		})
		if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "allowed", 1), metav1.CreateOptions{}); err != nil {
			t.Errorf("a PodGroup the policy allows was refused: %v", err)
		}
	})

	t.Run("MutatingAdmissionPolicy applies where the cluster serves it, and is reported off where not", func(t *testing.T) {
		ctx := testContext(t, 2*time.Minute)
		if !servesResource(t, "admissionregistration.k8s.io/v1", "mutatingadmissionpolicies") {
			data, err := os.ReadFile(env.LogPath("muster-apiserver"))
			if err != nil {
				t.Fatalf("reading Muster's log: %v", err)
			}
			want := `"Admission plugin turned off: the cluster does not serve its API" plugin="MutatingAdmissionPolicy"`
			if n := strings.Count(string(data), want); n != 1 {
				t.Fatalf("Muster's log says %d times %s, want once", n, want)
			}
			return
		}
		ns := namespace(t, ctx)
		name := ns + "-label"
		policy := &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy:      ptrTo(admissionregistrationv1.Fail),
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				MatchConstraints:   &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{podGroupRule}},
				Mutations: []admissionregistrationv1.Mutation{{
					PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{
						Expression: `[JSONPatch{op: "add", path: "/metadata/labels", value: {"mutated-by": "policy"}}]`,
					},
				}},
			},
		}
		binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, MatchResources: inNamespace(ns)},
		}
		mapi := kube.AdmissionregistrationV1()
		if _, err := mapi.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating policy: %v", err)
		}
		t.Cleanup(func() {
			_ = mapi.MutatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = mapi.MutatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		if _, err := mapi.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating binding: %v", err)
		}
		attempt := 0
		waitFor(t, ctx, "Muster to apply the policy", func(ctx context.Context) (bool, error) {
			attempt++
			pg, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, fmt.Sprintf("g-%d", attempt), 1), metav1.CreateOptions{})
			if apierrors.IsServiceUnavailable(err) {
				// The plugin reads PodGroup's schema from the cluster's
				// OpenAPI, which it refreshes every 5s: until then, with
				// failurePolicy Fail, it refuses with 503.
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("create: %w", err)
			}
			return pg.Labels["mutated-by"] == "policy", nil
		})
	})
}

// servesResource reports whether kube-apiserver's discovery lists resource
// in groupVersion.
func servesResource(t *testing.T, groupVersion, resource string) bool {
	t.Helper()
	list, err := kube.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("discovering %s: %v", groupVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource })
}

func ptrTo[T any](v T) *T { return &v }
