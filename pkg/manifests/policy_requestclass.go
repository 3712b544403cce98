package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// RequestClassPolicyName names the ValidatingAdmissionPolicy, and its
// binding, that keep the PriorityClass of capacity-request pods to Muster's
// controller.
const RequestClassPolicyName = "muster-capacity-request-class"

// RequestClassPolicy returns the policy that lets no one but Muster's
// controller create a pod of scheduling.CapacityRequestPriorityClass. The
// controller takes a pod of that class, labelled with
// scheduling.CapacityRequestLabel and controlled by the PodGroup it names,
// for a capacity request (capacity.requestKey): room an autoscaler added
// for one gang, which preemption never takes. A tenant that made its own
// PodGroup the controller of its own pods of that class would otherwise
// have pods that no gang may preempt (issue 34, item 8). The class's
// priority (-10, preemptionPolicy Never) is no use to anyone else.
// Administrators (who hold every verb, ConfinedVerb included) may still.
func RequestClassPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	class := celString(scheduling.CapacityRequestPriorityClass)
	return failClosedPolicy(RequestClassPolicyName, policyPodRules(admissionregistrationv1.Create, "pods"),
		[]admissionregistrationv1.MatchCondition{{
			Name:       "capacity-request-class",
			Expression: fmt.Sprintf("has(object.spec.priorityClassName) && object.spec.priorityClassName == %s", class),
		}},
		[]admissionregistrationv1.Validation{{
			// Muster's ClusterRole grants the verb; an administrator holds
			// every verb. No tenant role grants it.
			Expression: fmt.Sprintf("authorizer.group(%s).resource(%s).check(%s).allowed()",
				celString(scheduling.GroupName), celString(ConfinedResource), celString(ConfinedVerb)),
			Message: fmt.Sprintf("spec.priorityClassName: Forbidden: only %s, and administrators, create pods of priority class %s, its capacity-request pods, "+
				"which preemption never takes; use another class", musterWho, scheduling.CapacityRequestPriorityClass),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		}})
}

// RequestClassPolicyBinding binds RequestClassPolicy in every namespace.
func RequestClassPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := PolicyBinding(Config{}, RequestClassPolicyName)
	b.Spec.MatchResources = nil
	return b
}
