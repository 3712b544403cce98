package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Preemption: to make room for a gang of higher priority, Muster's
// controller evicts whole gangs of lower priority, and with
// --preempt-unmanaged pods without the group label too. It marks each victim
// with the condition DisruptionTarget, reason
// scheduling.ReasonPreemptionByMuster, through pods/status, as
// kube-scheduler's preemption marks its victims, and then deletes the pod.
// RBAC grants "patch pods/status" and "delete pods" whole; the rules below
// narrow them in WritesPolicy:
//   - through pods/status, Muster may add that condition, or turn an
//     existing DisruptionTarget condition into it, and change nothing else:
//     no other condition, no other status field, no finalizer;
//   - it may delete only a pod that already carries that condition, or a
//     capacity-request pod (label scheduling.CapacityRequestLabel), which
//     it created itself (policy_capacityrequest.go) and deletes unmarked.
//
// So every pod of a workload Muster deletes was marked first, where its
// owner, a Job's podFailurePolicy and the group's accounting see why it
// went, and Muster's credentials cannot delete an arbitrary pod in one
// request. The rules hold for labelled and unlabelled pods alike.

// celMarked holds when the condition c is DisruptionTarget with status True
// and reason PreemptionByMuster.
func celMarked(c string) string {
	return fmt.Sprintf("%[1]s.type == %[2]s && %[1]s.status == %[3]s && has(%[1]s.reason) && %[1]s.reason == %[4]s",
		c, celString(string(corev1.DisruptionTarget)), celString(string(corev1.ConditionTrue)), celString(scheduling.ReasonPreemptionByMuster))
}

// celConditions is the list of conditions of the pod at root, [] when it has
// none.
func celConditions(root string) string {
	return fmt.Sprintf("(has(%[1]s.status) && has(%[1]s.status.conditions) ? %[1]s.status.conditions : [])", root)
}

// preemptionVariables are WritesPolicy's variables for its preemption rules.
// They read object, so only rules of a pods/status update use them.
func preemptionVariables() []admissionregistrationv1.Variable {
	target := celString(string(corev1.DisruptionTarget))
	// The status as a map, field name to value, so that a field added to
	// PodStatus after Kubernetes 1.30 is compared too without naming it
	// (at run time a policy sees the pod as a map; dyn() tells the type
	// checker so).
	status := func(root string) string {
		return fmt.Sprintf("(has(%[1]s.status) ? dyn(%[1]s.status) : {})", root)
	}
	return []admissionregistrationv1.Variable{
		{Name: "newOtherConditions", Expression: fmt.Sprintf("%s.filter(c, c.type != %s)", celConditions("object"), target)},
		{Name: "oldOtherConditions", Expression: fmt.Sprintf("%s.filter(c, c.type != %s)", celConditions("oldObject"), target)},
		{Name: "newTargets", Expression: fmt.Sprintf("%s.filter(c, c.type == %s)", celConditions("object"), target)},
		{Name: "oldTargets", Expression: fmt.Sprintf("%s.filter(c, c.type == %s)", celConditions("oldObject"), target)},
		{Name: "newStatus", Expression: status("object")},
		{Name: "oldStatus", Expression: status("oldObject")},
		// The status fields, conditions aside, that the update adds,
		// changes or removes.
		{Name: "statusChanged", Expression: "variables.newStatus.filter(k, k != 'conditions' && " +
			"!(k in variables.oldStatus && variables.newStatus[k] == variables.oldStatus[k])) + " +
			"variables.oldStatus.filter(k, k != 'conditions' && !(k in variables.newStatus))"},
	}
}

// preemptionValidations are WritesPolicy's rules for preemption's writes:
// a pods/status update that marks the pod, and the delete after it.
func preemptionValidations() []admissionregistrationv1.Validation {
	mark := fmt.Sprintf("the condition %s with status True and reason %s", corev1.DisruptionTarget, scheduling.ReasonPreemptionByMuster)
	onStatus := func(expr string) string { return "!variables.statusWrite || (" + expr + ")" }
	otherField := "through pods/status it may change no status field but status.conditions"
	return []admissionregistrationv1.Validation{
		confinedWrite(onStatus("variables.newOtherConditions == variables.oldOtherConditions"), "status.conditions",
			fmt.Sprintf("through pods/status it may change no condition but %s", corev1.DisruptionTarget)),
		confinedWrite(onStatus(fmt.Sprintf("variables.newTargets == variables.oldTargets || (variables.newTargets.size() == 1 && %s)", celMarked("variables.newTargets[0]"))),
			"status.conditions", fmt.Sprintf("through pods/status it may only add %s, or turn the pod's %s condition into it", mark, corev1.DisruptionTarget)),
		{
			Expression: onStatus("variables.statusChanged.size() == 0"),
			// The message names the field; its fallback names status.
			MessageExpression: fmt.Sprintf("'status.' + string(variables.statusChanged[0]) + ': ' + %s", celString(confinedRule(otherField))),
			Message:           "status: " + confinedRule(otherField),
			Reason:            ptr.To(metav1.StatusReasonForbidden),
		},
		// Labels and annotations are confined on every update; the
		// finalizer Muster may take off a pod, it takes off through pods.
		confinedWrite(onStatus(celUnchanged("metadata.finalizers")), "metadata.finalizers",
			"through pods/status it may not change the finalizers"),
		// A capacity-request pod needs no mark: the controller created it
		// (muster-pod-creates), nothing runs in it, and it deletes it once
		// the gang is placed or the request times out. The label alone is
		// not enough: any tenant may put it on a pod, which Muster could
		// then delete unmarked; so the class and the owner must be those
		// muster-pod-creates requires.
		confinedWrite(fmt.Sprintf("!variables.deleting || %s || %s.exists(c, %s)", celCapacityRequestPod("oldObject"), celConditions("oldObject"), celMarked("c")),
			"status.conditions", fmt.Sprintf("it may delete only a pod that carries %s, which it adds through pods/status first, or a capacity-request pod it created (label %s naming the PodGroup that owns it as controller, priority class %s)",
				mark, scheduling.CapacityRequestLabel, scheduling.CapacityRequestPriorityClass)),
	}
}
