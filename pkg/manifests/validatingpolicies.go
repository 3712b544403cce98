package manifests

import admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

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
