package cluster

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TerminalPhasePolicyName names the harness's ValidatingAdmissionPolicy that
// keeps a pod that has ended in its phase.
const TerminalPhasePolicyName = "harness-terminal-phase"

// registerTerminalPhasePolicy makes kwok keep a rule that a kubelet keeps:
// a pod that reached Succeeded or Failed never changes phase again.
// kube-apiserver does not enforce it, and kwok v0.8.0 fires a stage whose
// selector held when it was scheduled without looking at the pod again. A
// pod deleted just as its run time ended then went Succeeded (pod-succeed)
// and, a grace period later, Failed (pod-terminate); Muster had rightly
// counted it at its first end, as the Job controller does (KEP-2307), and
// the chaos suite at 10,000 pods reported a count that differed from the
// pod's last phase. With this policy kube-apiserver refuses the second
// change, as a kubelet would never send it.
func (c *Cluster) registerTerminalPhasePolicy(ctx context.Context) error {
	validating, _, err := c.servesAdmissionPolicies()
	if err != nil || !validating {
		return err
	}
	ended := "has(oldObject.status.phase) && oldObject.status.phase in ['Succeeded', 'Failed']"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: TerminalPhasePolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/status"},
					},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!(%s) || (has(object.status.phase) && object.status.phase == oldObject.status.phase)", ended),
				MessageExpression: "'status.phase: Forbidden: the pod ended ' + oldObject.status.phase + " +
					"'; a kubelet never changes the phase of a pod that ended (the test harness keeps kwok to that)'",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: TerminalPhasePolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        TerminalPhasePolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return c.createPolicy(ctx, policy, binding)
}
