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
// change, as a kubelet would never send it. Nor does a kubelet report a
// deleted pod Succeeded by a container that ended after its grace period.
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
			}, {
				// A kubelet kills a deleted pod when its grace period ends:
				// it never reports that the pod exited 0 after that.
				// kwok v0.8.0 may, from a stage it scheduled before the
				// deletion (pod-succeed) and played late, and Muster has
				// rightly counted such a pod as failed by then.
				Expression: "!(has(object.metadata.deletionTimestamp) && has(object.status.phase) && object.status.phase == 'Succeeded' && " +
					"has(object.status.containerStatuses) && object.status.containerStatuses.exists(c, has(c.state.terminated) && " +
					"has(c.state.terminated.finishedAt) && c.state.terminated.finishedAt > object.metadata.deletionTimestamp))",
				Message: "status.phase: Forbidden: a container finished after the pod's deletionTimestamp, when a kubelet would have killed it; " +
					"a kubelet never reports such a pod Succeeded (the test harness keeps kwok to that)",
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
