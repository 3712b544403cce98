package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// WritesPolicyName names the ValidatingAdmissionPolicy, and its binding, that
// confine Muster's own pod writes. RBAC can only grant "patch pods", "patch
// pods/status" and "delete pods"; this policy narrows those grants to what
// the controller does, and but for preemption and capacity-request pods to
// the pods it manages.
const WritesPolicyName = "muster-pod-writes"

// The policies find Muster by a permission, not by its user name: a
// namespace or service account renamed by an operator would silently stop a
// name from matching, and the confinement with it. Muster's ClusterRole
// (RBACFile) grants ConfinedVerb on ConfinedResource in
// scheduling.muster.dev, a resource the API does not serve, so the grant
// means nothing but "confine this requester"; it moves with the role's
// binding wherever the account lives.
//
// A requester granted every verb (cluster-admin, system:masters) holds that
// permission too, through the wildcard. It also holds UngrantedVerb, which
// no role names, and that tells the two apart: Muster holds the one and not
// the other. Only a cluster-wide grant counts, since the check names no
// namespace.
const (
	// ConfinedResource is the virtual resource whose ConfinedVerb marks
	// Muster's controller.
	ConfinedResource = "controller"
	// ConfinedVerb is the verb on ConfinedResource that only Muster's
	// ClusterRole grants.
	ConfinedVerb = "confine"
	// UngrantedVerb is a verb on ConfinedResource that no role grants: a
	// requester that holds it holds every verb, and is not Muster.
	UngrantedVerb = "never-granted"
	// serviceAccountsGroup is the group kube-apiserver puts every service
	// account in.
	serviceAccountsGroup = "system:serviceaccounts"
)

// celIsMuster holds for a request made by Muster's controller. It needs the
// authorizer variable, which policies offer in match conditions, variables
// and validations (Kubernetes 1.30 included), not in message expressions.
func celIsMuster() string {
	check := func(verb string) string {
		return fmt.Sprintf("authorizer.group(%s).resource(%s).check(%s).allowed()",
			celString(scheduling.GroupName), celString(ConfinedResource), celString(verb))
	}
	// Muster runs as a service account, whatever its name, so the group
	// every service account is in is checked first: it is a list lookup,
	// and it spares the authorizer calls for the kubelets' status updates,
	// the bulk of pod updates. The second check runs only for the few
	// requesters that pass the first.
	return fmt.Sprintf("request.userInfo.groups.exists(g, g == %s) && ", celString(serviceAccountsGroup)) +
		check(ConfinedVerb) + " && !" + check(UngrantedVerb)
}

// musterWho names Muster's controller in denials, by the permission the
// policies find it by.
var musterWho = fmt.Sprintf("Muster's controller (granted %q on %s.%s)", ConfinedVerb, ConfinedResource, scheduling.GroupName)

// celEnded holds when the pod at root (oldObject) has ended, as
// scheduling.IsTerminal says.
func celEnded(root string) string {
	return fmt.Sprintf("has(%[1]s.status) && has(%[1]s.status.phase) && %[1]s.status.phase in [%[2]s, %[3]s]",
		root, celString(string(corev1.PodSucceeded)), celString(string(corev1.PodFailed)))
}

// celHasFinalizer holds when the pod at root carries the tracking finalizer.
func celHasFinalizer(root string) string {
	return celListHas(root, "metadata.finalizers", celString(scheduling.TrackingFinalizer))
}

// WritesPolicy returns the policy that lets Muster's controller change a pod
// only as the controller does, and only a pod it manages:
//   - remove the tracking finalizer, from any pod (the controller takes it
//     off ended or deleted pods wherever they live), and in that write set
//     scheduling.muster.dev/counted once on a pod with the group label;
//   - add it back (adoption, pkg/controller/podgroup/adopt.go) only to a
//     pod with the group label that has not ended;
//   - remove the admission gate, only from a pod with the group label;
//   - pin such a pod, while it carries the gate, to a node: add a
//     metadata.name In [node] requirement to the terms of its required node
//     affinity (scheduling.PinRequirement);
//   - preempt a pod, labelled or not: mark it through pods/status, then
//     delete it (policy_preemption.go);
//   - delete a capacity-request pod, unmarked (CreatesPolicy confines
//     which pods it may create).
//
// Anything else it changes is denied. The rules compare only the fields an
// update of a pod may change at all (kube-apiserver's own validation refuses
// the rest, and pods/status cannot change the spec).
func WritesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	pin := scheduling.PinRequirement("")
	isPin := fmt.Sprintf("r.key == %s && r.operator == %s && has(r.values) && r.values.size() == 1",
		celString(pin.Key), celString(string(pin.Operator)))
	// The terms of the required node affinity, as a list of the terms'
	// matchExpressions and one of their matchFields less pin requirements.
	terms := func(root string) string {
		guard := fmt.Sprintf("has(%[1]s.spec.affinity) && has(%[1]s.spec.affinity.nodeAffinity) && has(%[1]s.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution)", root)
		return fmt.Sprintf("(%s ? %s.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms : [])", guard, root)
	}
	finalizers := func(root string) string {
		return fmt.Sprintf("%s.filter(f, f != %s)", celList(root, "metadata.finalizers"), celString(scheduling.TrackingFinalizer))
	}
	gates := func(root string) string {
		return fmt.Sprintf("%s.map(g, g.name)", celList(root, "spec.schedulingGates"))
	}
	vars := []admissionregistrationv1.Variable{
		{Name: "newTerms", Expression: terms("object")},
		{Name: "oldTerms", Expression: terms("oldObject")},
		// A pod Muster manages carries its group label; the label cannot
		// change once the pod exists (muster-pod-labels), so the old pod's
		// label is the new one's.
		{Name: "managed", Expression: fmt.Sprintf("has(oldObject.metadata.labels) && %s in oldObject.metadata.labels", celString(scheduling.PodGroupLabel))},
		{Name: "gated", Expression: celHasGate("oldObject", scheduling.AdmissionGate)},
		// A gate has only its name: the lists compare in one call.
		{Name: "gatesChanged", Expression: celList("object", "spec.schedulingGates") + " != " + celList("oldObject", "spec.schedulingGates")},
		// On a DELETE there is no object: the rules of an update are
		// skipped, and only preemption's rule for deletes applies.
		{Name: "deleting", Expression: fmt.Sprintf("request.operation == %s", celString(string(admissionregistrationv1.Delete)))},
		{Name: "statusWrite", Expression: "has(request.subResource) && request.subResource == 'status'"},
	}
	vars = append(vars, preemptionVariables()...)
	exprs := func(v string) string {
		return fmt.Sprintf("variables.%s.map(t, %s)", v, celList("t", "matchExpressions"))
	}
	unpinned := func(v string) string {
		return fmt.Sprintf("variables.%s.map(t, %s.filter(r, !(%s)))", v, celList("t", "matchFields"), isPin)
	}
	// deny confines an update; a delete skips it.
	deny := func(expr, fieldPath, msg string) admissionregistrationv1.Validation {
		return confinedWrite("variables.deleting || ("+expr+")", fieldPath, msg)
	}
	unchanged := func(path string) admissionregistrationv1.Validation {
		return deny(celUnchanged(path), path, "it may not change this field")
	}
	termsRule := fmt.Sprintf("%s == %s && %s == %s", exprs("newTerms"), exprs("oldTerms"), unpinned("newTerms"), unpinned("oldTerms"))
	// Where the pod had no required terms, the pin adds one term that holds
	// the pin alone.
	newPinTerm := fmt.Sprintf("variables.oldTerms.size() == 0 && %s.all(l, l.size() == 0) && %s.all(l, l.size() == 0)", exprs("newTerms"), unpinned("newTerms"))
	affinity := "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

	// Every label but scheduling.muster.dev/counted stays as it was.
	counted := celString(scheduling.CountedLabel)
	// Compared whole first, in one call: a status write to a pod of any
	// length of labels costs no comprehension.
	othersKept := celUnchanged("metadata.labels") + " || " + fmt.Sprintf("((!has(object.metadata.labels) || object.metadata.labels.all(k, k == %[1]s || "+
		"(has(oldObject.metadata.labels) && k in oldObject.metadata.labels && oldObject.metadata.labels[k] == object.metadata.labels[k]))) && "+
		"(!has(oldObject.metadata.labels) || oldObject.metadata.labels.all(k, k == %[1]s || (has(object.metadata.labels) && k in object.metadata.labels))))", counted)
	countedKept := celKeyOpt("object", "metadata.labels", scheduling.CountedLabel) + " == " + celKeyOpt("oldObject", "metadata.labels", scheduling.CountedLabel)
	// That one is set once, on a pod of a group, in the write that takes
	// the finalizer off a counted pod (pkg/controller/podgroup/patch.go).
	countedSet := fmt.Sprintf("variables.managed && %s.size() == 0 && %s && !(%s)",
		celKeyOpt("oldObject", "metadata.labels", scheduling.CountedLabel), celHasFinalizer("oldObject"), celHasFinalizer("object"))

	validations := []admissionregistrationv1.Validation{
		deny(othersKept, "metadata.labels", fmt.Sprintf("it may not change a label but %s", scheduling.CountedLabel)),
		deny(fmt.Sprintf("(%s) || (%s)", countedKept, countedSet), "metadata.labels",
			fmt.Sprintf("it may set %s only once, on a pod with the label %s, in the write that removes its finalizer", scheduling.CountedLabel, scheduling.PodGroupLabel)),
		unchanged("metadata.annotations"),
		unchanged("metadata.ownerReferences"),
		deny(celUnchanged("metadata.finalizers")+" || "+finalizers("object")+" == "+finalizers("oldObject"), "metadata.finalizers", "it may not change another finalizer"),
		// A finalizer put on a pod Muster does not manage would hold it
		// for ever; one put on an ended pod would count it again.
		deny(fmt.Sprintf("%s || !(%s) || (variables.managed && !(%s))", celHasFinalizer("oldObject"), celHasFinalizer("object"), celEnded("oldObject")),
			"metadata.finalizers", fmt.Sprintf("it may add its finalizer only to a pod with the label %s that has not ended", scheduling.PodGroupLabel)),
		deny(fmt.Sprintf("!variables.gatesChanged || %s == %s.filter(n, n != %s)", gates("object"), gates("oldObject"), celString(scheduling.AdmissionGate)),
			"spec.schedulingGates", "it may only remove its own gate"),
		deny("!variables.gatesChanged || variables.managed", "spec.schedulingGates",
			fmt.Sprintf("it may remove its gate only from a pod with the label %s", scheduling.PodGroupLabel)),
		unchanged("spec.containers"),
		unchanged("spec.initContainers"),
		unchanged("spec.activeDeadlineSeconds"),
		unchanged("spec.tolerations"),
		unchanged("spec.nodeSelector"),
		unchanged("spec.affinity.podAffinity"),
		unchanged("spec.affinity.podAntiAffinity"),
		unchanged("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
		deny(fmt.Sprintf("(%s) || (%s)", termsRule, newPinTerm), affinity,
			fmt.Sprintf("it may only add a %s In [node] requirement to the terms", pin.Key)),
		deny(fmt.Sprintf("(%s) || (variables.managed && variables.gated)", termsRule), affinity,
			fmt.Sprintf("it may pin only a pod with the label %s that carries its gate %s", scheduling.PodGroupLabel, scheduling.AdmissionGate)),
	}
	validations = append(validations, preemptionValidations()...)
	p := podUpdatePolicy(WritesPolicyName, vars, validations)
	// Deletes too, which preemption makes; an update of pods/status is
	// matched already.
	p.Spec.MatchConstraints.ResourceRules = append(p.Spec.MatchConstraints.ResourceRules, policyPodRules(admissionregistrationv1.Delete, "pods")...)
	p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "muster-controller", Expression: celIsMuster()}}
	return p
}

// confinedWrite is the validation that denies Muster's write unless expr
// holds, naming fieldPath and, after what Muster may do at all, the rule
// broken.
func confinedWrite(expr, fieldPath, rule string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{
		Expression: expr,
		Message:    fieldPath + ": " + confinedRule(rule),
		Reason:     ptr.To(metav1.StatusReasonForbidden),
	}
}

// confinedRule is a denial of Muster's write, without the field: what
// Muster may do at all, then rule.
func confinedRule(rule string) string {
	return fmt.Sprintf("Forbidden: %s may only remove its finalizer %s (labelling a counted pod %s), add it to a pod with the label %s that has not ended, "+
		"remove its scheduling gate %s from such a pod and pin it to a node, and preempt a pod: add the condition %s "+
		"(status True, reason %s) through pods/status, then delete the pod, and create and delete capacity-request pods (label %s); %s",
		musterWho, scheduling.TrackingFinalizer, scheduling.CountedLabel, scheduling.PodGroupLabel, scheduling.AdmissionGate,
		corev1.DisruptionTarget, scheduling.ReasonPreemptionByMuster, scheduling.CapacityRequestLabel, rule)
}

// WritesPolicyBinding binds WritesPolicy in every namespace, not only those
// Muster manages: the controller takes its finalizer off pods in any
// namespace, and its writes are confined everywhere.
func WritesPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := PolicyBinding(Config{}, WritesPolicyName)
	b.Spec.MatchResources = nil
	return b
}
