package pods

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// WritesPolicyName names the ValidatingAdmissionPolicy, and its binding, that
// confine Muster's own pod writes. RBAC can only grant "patch pods"; this
// policy narrows that grant to what the controller does.
const WritesPolicyName = "muster-pod-writes"

// WritesPolicy returns the policy that lets the service account
// namespace/name change a pod only as the controller does:
//   - remove the tracking finalizer, or add it back (adoption);
//   - remove the admission gate;
//   - pin the pod to a node: add a metadata.name In [node] requirement to the
//     terms of its required node affinity (pkg/controller/scheduling.PinRequirement).
//
// Anything else the account changes is denied, and so is every write of
// pods/status, which the controller never makes. The rules compare only the
// fields an update of a pod may change at all (kube-apiserver's own
// validation refuses the rest).
func WritesPolicy(namespace, name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	user := serviceaccount.MakeUsername(namespace, name)
	pin := scheduling.PinRequirement("")
	isPin := fmt.Sprintf("r.key == %s && r.operator == %s && has(r.values) && r.values.size() == 1",
		celString(pin.Key), celString(string(pin.Operator)))
	// The terms of the required node affinity, as a list of the terms'
	// matchExpressions and one of their matchFields less pin requirements.
	terms := func(root string) string {
		guard := fmt.Sprintf("has(%[1]s.spec.affinity) && has(%[1]s.spec.affinity.nodeAffinity) && has(%[1]s.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution)", root)
		return fmt.Sprintf("(%s ? %s.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms : [])", guard, root)
	}
	vars := []admissionregistrationv1.Variable{
		{Name: "newTerms", Expression: terms("object")},
		{Name: "oldTerms", Expression: terms("oldObject")},
	}
	exprs := func(v string) string {
		return fmt.Sprintf("variables.%s.map(t, %s)", v, celList("t", "matchExpressions"))
	}
	unpinned := func(v string) string {
		return fmt.Sprintf("variables.%s.map(t, %s.filter(r, !(%s)))", v, celList("t", "matchFields"), isPin)
	}
	deny := func(expr, fieldPath, msg string) admissionregistrationv1.Validation {
		return admissionregistrationv1.Validation{
			Expression: expr,
			Message: fmt.Sprintf("%s: Forbidden: %s may only remove or add the finalizer %s, remove the scheduling gate %s and pin a gated pod to a node; %s",
				fieldPath, user, scheduling.TrackingFinalizer, scheduling.AdmissionGate, msg),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		}
	}
	unchanged := func(path string) admissionregistrationv1.Validation {
		return deny(celUnchanged(path), path, "it may not change this field")
	}
	finalizers := func(root string) string {
		return fmt.Sprintf("%s.filter(f, f != %s)", celList(root, "metadata.finalizers"), celString(scheduling.TrackingFinalizer))
	}
	gates := func(root string) string {
		return fmt.Sprintf("%s.map(g, g.name)", celList(root, "spec.schedulingGates"))
	}

	validations := []admissionregistrationv1.Validation{
		// RBAC grants no pods/status either; this holds if a role ever does.
		deny("!has(request.subResource) || request.subResource == ''", "status", "it never writes pods/status"),
		unchanged("metadata.labels"),
		unchanged("metadata.annotations"),
		unchanged("metadata.ownerReferences"),
		deny(finalizers("object")+" == "+finalizers("oldObject"), "metadata.finalizers", "it may not change another finalizer"),
		deny(fmt.Sprintf("%[1]s == %[2]s || %[1]s == %[2]s.filter(n, n != %[3]s)", gates("object"), gates("oldObject"), celString(scheduling.AdmissionGate)),
			"spec.schedulingGates", "it may only remove its own gate"),
		unchanged("spec.containers"),
		unchanged("spec.initContainers"),
		unchanged("spec.activeDeadlineSeconds"),
		unchanged("spec.tolerations"),
		unchanged("spec.nodeSelector"),
		unchanged("spec.affinity.podAffinity"),
		unchanged("spec.affinity.podAntiAffinity"),
		unchanged("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
		// Where the pod had no required terms, the pin adds one term that
		// holds the pin alone.
		deny(fmt.Sprintf("(%[1]s == %[2]s && %[3]s == %[4]s) || (variables.oldTerms.size() == 0 && %[1]s.all(l, l.size() == 0) && %[3]s.all(l, l.size() == 0))",
			exprs("newTerms"), exprs("oldTerms"), unpinned("newTerms"), unpinned("oldTerms")),
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
			fmt.Sprintf("it may only add a %s In [node] requirement to the terms", pin.Key)),
	}
	p := podUpdatePolicy(WritesPolicyName, vars, validations)
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{
		Name:       "muster-service-account",
		Expression: "request.userInfo.username == " + celString(user),
	}}
	return p
}

// WritesPolicyBinding binds WritesPolicy in every namespace, not only those
// Muster manages: the controller takes its finalizer off pods in any
// namespace, and its writes are confined everywhere.
func WritesPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := PolicyBinding(Config{}, WritesPolicyName)
	b.Spec.MatchResources = nil
	return b
}
