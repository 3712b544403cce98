package manifests

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// QuotaWritesPolicyName names the ValidatingAdmissionPolicy, and its
// binding, that confine Muster's ResourceQuota writes to what its quota
// admission plugin (pkg/admission/quota) records: the usage of the objects
// it counts.
const QuotaWritesPolicyName = "muster-quota-writes"

// CountedQuotaResources are the quota resource names whose usage Muster's
// quota admission plugin records, one object count per kind it serves
// (TestQuotaPolicyNamesWhatThePluginCounts keeps them in step).
func CountedQuotaResources() []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, resource := range []string{"podgroups", "workloads"} {
		names = append(names, generic.ObjectCountQuotaResourceNameFor(schema.GroupResource{Group: scheduling.GroupName, Resource: resource}))
	}
	return names
}

// QuotaWritesPolicy returns the policy that lets Muster's controller update
// a ResourceQuota only as the ResourceQuota admission plugin does: through
// resourcequotas/status, changing status.used at the names it counts
// (CountedQuotaResources) and nothing else. RBAC grants the update of every
// quota's status; without this, Muster's credentials could rewrite the
// recorded usage of pods or CPU in any namespace, and lift or exhaust a
// tenant's quota.
func QuotaWritesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	var counted []string
	for _, n := range CountedQuotaResources() {
		counted = append(counted, celString(string(n)))
	}
	// kube-apiserver's type checker knows no field of a ResourceList (a map
	// of quantities) and would report status.hard and status.used as
	// undefined in the policy's status; read through dyn(), they are
	// looked up on the object as it is.
	list := func(root, field string) string {
		return fmt.Sprintf("(has(%[1]s.status) && has(dyn(%[1]s.status).%[2]s) ? [dyn(%[1]s.status).%[2]s] : [])", root, field)
	}
	used := func(root string) string {
		return fmt.Sprintf("(has(%[1]s.status) && has(dyn(%[1]s.status).used) ? dyn(%[1]s.status).used : {})", root)
	}
	deny := func(expr, fieldPath, msg string) admissionregistrationv1.Validation {
		return admissionregistrationv1.Validation{
			Expression: expr,
			Message: fmt.Sprintf("%s: Forbidden: %s may only update status.used of a ResourceQuota, at %s, as its quota admission plugin records them; %s",
				fieldPath, musterWho, strings.Join(stringNames(CountedQuotaResources()), " and "), msg),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		}
	}
	unchanged := func(path string) admissionregistrationv1.Validation {
		return deny(celUnchanged(path), path, "it may not change this field")
	}
	vars := []admissionregistrationv1.Variable{
		{Name: "counted", Expression: "[" + strings.Join(counted, ", ") + "]"},
		{Name: "newUsed", Expression: used("object")},
		{Name: "oldUsed", Expression: used("oldObject")},
	}
	validations := []admissionregistrationv1.Validation{
		// RBAC grants only the status subresource; this holds if a role
		// ever grants more.
		deny("has(request.subResource) && request.subResource == 'status'", "spec", "it only writes resourcequotas/status"),
		unchanged("metadata.labels"),
		unchanged("metadata.annotations"),
		unchanged("metadata.finalizers"),
		unchanged("metadata.ownerReferences"),
		unchanged("spec"),
		deny(list("object", "hard")+" == "+list("oldObject", "hard"), "status.hard", "it may not change this field"),
		deny("variables.newUsed.all(k, k in variables.counted || (k in variables.oldUsed && variables.oldUsed[k] == variables.newUsed[k])) && "+
			"variables.oldUsed.all(k, k in variables.counted || k in variables.newUsed)",
			"status.used", "it may not change the usage of another resource"),
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: QuotaWritesPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups:   []string{""},
						APIVersions: []string{"v1"},
						Resources:   []string{"resourcequotas", "resourcequotas/status"},
						Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
					},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "muster-controller", Expression: celIsMuster()}},
			Variables:       vars,
			Validations:     validations,
		},
	}
}

// QuotaWritesPolicyBinding binds QuotaWritesPolicy in every namespace: the
// plugin records usage wherever a PodGroup or Workload is created.
func QuotaWritesPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := PolicyBinding(Config{}, QuotaWritesPolicyName)
	b.Spec.MatchResources = nil
	return b
}

func stringNames(names []corev1.ResourceName) []string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return s
}
