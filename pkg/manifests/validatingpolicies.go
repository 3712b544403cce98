package manifests

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ValidatingPolicy is a ValidatingAdmissionPolicy and the binding that puts
// it in force.
type ValidatingPolicy struct {
	Policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	Binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// ValidatingPolicies are Muster's ValidatingAdmissionPolicies with their
// bindings, in the order PoliciesFile holds them: what a deployment and the
// local cluster install alike.
func ValidatingPolicies() []ValidatingPolicy {
	return []ValidatingPolicy{
		{LabelsPolicy(), PolicyBinding(Config{}, LabelsPolicyName)},
		{WritesPolicy(), WritesPolicyBinding()},
		{CreatesPolicy(), CreatesPolicyBinding()},
		{QuotaWritesPolicy(), QuotaWritesPolicyBinding()},
		{ConfigWritesPolicy(), ConfigWritesPolicyBinding()},
		{RequestClassPolicy(), RequestClassPolicyBinding()},
		{OrderedReadyPolicy(), OrderedReadyPolicyBinding()},
	}
}

// failClosedPolicy is a policy named name that checks validations on the
// requests rules match, when every condition holds, failing closed.
func failClosedPolicy(name string, rules []admissionregistrationv1.NamedRuleWithOperations, conditions []admissionregistrationv1.MatchCondition,
	validations []admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy:   ptr.To(admissionregistrationv1.Equivalent),
				ResourceRules: rules,
			},
			MatchConditions: conditions,
			Validations:     validations,
		},
	}
}
