package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// LabelsPolicyName names the ValidatingAdmissionPolicy, and its binding, that
// check creates and updates of labelled pods in place of the validating
// webhook. It runs inside kube-apiserver: no network hop, and no outage when
// no Muster replica answers, so a user can always remove Muster's finalizer
// by hand.
const LabelsPolicyName = "muster-pod-labels"

// DNS-1123 names, as k8s.io/apimachinery/pkg/util/validation spells them.
const (
	dns1123LabelRegexp     = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	dns1123SubdomainRegexp = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// minCountRegexp bounds the digits, so int() cannot overflow; the
	// range check after it then matches scheduling.ParseMinCount.
	minCountRegexp = `^[+]?0*[0-9]{1,10}$`
)

// LabelsPolicy returns the policy that enforces, on every create and update
// of a pod with the group label (updates through pods and pods/status
// alike), what the validating webhook enforces: the group label names a
// PodGroup, the group and managed labels are immutable, and Muster's
// annotations are well formed when they change (the topology annotations
// by the rules of spec.schedulingConstraints). Beyond the webhook, it lets
// no one but Muster's controller put the tracking finalizer back on an
// existing pod, and the controller only on a pod that has not ended, and
// lets no one but the controller set scheduling.muster.dev/counted. Values that did not change
// are not checked again, so a pod stored before the rules existed stays
// updatable. It also bounds what an update may add to the pod's inputs to
// Muster's cache (updateBounds). Only the role label and annotations, which
// CEL cannot parse, are left to the webhook (RolesExpression).
func LabelsPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	labels, annotations := "metadata.labels", "metadata.annotations"
	vars := []admissionregistrationv1.Variable{
		{Name: "newGroup", Expression: celKeyOpt("object", labels, scheduling.PodGroupLabel)},
		{Name: "oldGroup", Expression: celKeyOpt("oldObject", labels, scheduling.PodGroupLabel)},
		{Name: "newManaged", Expression: celKeyOpt("object", labels, scheduling.ManagedLabel)},
		{Name: "oldManaged", Expression: celKeyOpt("oldObject", labels, scheduling.ManagedLabel)},
		{Name: "newMinCount", Expression: celKeyOpt("object", annotations, scheduling.MinCountAnnotation)},
		{Name: "oldMinCount", Expression: celKeyOpt("oldObject", annotations, scheduling.MinCountAnnotation)},
		{Name: "newWorkload", Expression: celKeyOpt("object", annotations, scheduling.WorkloadAnnotation)},
		{Name: "oldWorkload", Expression: celKeyOpt("oldObject", annotations, scheduling.WorkloadAnnotation)},
		{Name: "newTemplate", Expression: celKeyOpt("object", annotations, scheduling.TemplateAnnotation)},
		{Name: "oldTemplate", Expression: celKeyOpt("oldObject", annotations, scheduling.TemplateAnnotation)},
		{Name: "workloadRefChanged", Expression: "variables.newWorkload != variables.oldWorkload || variables.newTemplate != variables.oldTemplate"},
		{Name: "finalizerAdded", Expression: fmt.Sprintf("oldObject != null && !(%s) && %s", celHasFinalizer("oldObject"), celHasFinalizer("object"))},
		{Name: "countedChanged", Expression: celKeyOpt("object", labels, scheduling.CountedLabel) + " != " + celKeyOpt("oldObject", labels, scheduling.CountedLabel)},
	}
	vars = append(vars, topologyVariables()...) // policy_topology.go
	validations := []admissionregistrationv1.Validation{
		{
			Expression: fmt.Sprintf("variables.newGroup.size() == 0 || variables.newGroup == variables.oldGroup || "+
				"(variables.newGroup[0].size() <= 253 && variables.newGroup[0].matches('%s'))", dns1123SubdomainRegexp),
			MessageExpression: fmt.Sprintf("variables.newGroup[0] == '' ? %s : %s",
				celString(fmt.Sprintf("%s[%s]: Required value: %s", labels, scheduling.PodGroupLabel, scheduling.PodGroupLabelRule)),
				invalidMessage(labels, scheduling.PodGroupLabel, "variables.newGroup[0]", scheduling.PodGroupLabelRule+": a lowercase RFC 1123 subdomain")),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		immutableLabel("Group", scheduling.PodGroupLabel, "a pod joins a gang only when it is created; create a new pod with the label instead"),
		immutableLabel("Managed", scheduling.ManagedLabel, "only Muster's webhook sets it, when it adds the admission gate and tracking finalizer at creation"),
		{
			Expression: fmt.Sprintf("variables.newMinCount.size() == 0 || variables.newMinCount == variables.oldMinCount || "+
				"(variables.newMinCount[0].matches('%s') && int(variables.newMinCount[0]) >= 1 && int(variables.newMinCount[0]) <= %d)", minCountRegexp, scheduling.MaxGangMinCount),
			MessageExpression: invalidMessage(annotations, scheduling.MinCountAnnotation, "variables.newMinCount[0]", scheduling.MinCountRule),
			Reason:            ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: fmt.Sprintf("!variables.workloadRefChanged || variables.newWorkload.size() == 0 || "+
				"(variables.newWorkload[0].size() <= 253 && variables.newWorkload[0].matches('%s'))", dns1123SubdomainRegexp),
			MessageExpression: invalidMessage(annotations, scheduling.WorkloadAnnotation, "variables.newWorkload[0]",
				"must be the name of a Workload in the pod's namespace: a lowercase RFC 1123 subdomain of at most 253 characters"),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: fmt.Sprintf("!variables.workloadRefChanged || variables.newTemplate.size() == 0 || "+
				"(variables.newTemplate[0].size() <= 63 && variables.newTemplate[0].matches('%s'))", dns1123LabelRegexp),
			MessageExpression: invalidMessage(annotations, scheduling.TemplateAnnotation, "variables.newTemplate[0]",
				"must be the name of a pod-group template of the Workload: a lowercase RFC 1123 label of at most 63 characters"),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: "!variables.workloadRefChanged || variables.newWorkload.size() == variables.newTemplate.size()",
			MessageExpression: fmt.Sprintf("variables.newWorkload.size() == 0 ? %s : %s",
				celString(fmt.Sprintf("metadata.annotations[%s]: Required value: must be set when %s is set", scheduling.WorkloadAnnotation, scheduling.TemplateAnnotation)),
				celString(fmt.Sprintf("metadata.annotations[%s]: Required value: must be set when %s is set", scheduling.TemplateAnnotation, scheduling.WorkloadAnnotation))),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		// The controller counts the end of every pod that carries the
		// tracking finalizer and then takes it off; a finalizer put back on
		// an ended pod would have it counted again (issue 21, item 7). On
		// create the webhook or muster-pod-prepare adds it; on update only
		// Muster's controller may, adopting a pod that has not ended.
		{
			Expression: fmt.Sprintf("!variables.finalizerAdded || (%s && !(%s))", celIsMuster(), celEnded("oldObject")),
			Message: fmt.Sprintf("metadata.finalizers: Forbidden: the finalizer %s cannot be added to an existing pod: Muster adds it when the pod is created, "+
				"and only %s puts it back, on a pod that has not ended; a pod's end is counted once", scheduling.TrackingFinalizer, musterWho),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		},
	}
	validations = append(validations, topologyValidations()...) // policy_topology.go
	// The controller counts a pod's end, labelled so, again after a
	// restore of its etcd (pkg/controller/podgroup/restored.go): no one
	// else may set, change or remove that label.
	validations = append(validations, admissionregistrationv1.Validation{
		Expression: "!variables.countedChanged || " + celIsMuster(),
		Message:    fmt.Sprintf("%s[%s]: Forbidden: only %s sets it, when it counts the pod's end", labels, scheduling.CountedLabel, musterWho),
		Reason:     ptr.To(metav1.StatusReasonForbidden),
	})
	validations = append(validations, updateBounds()...) // policy_updatebounds.go
	validations = append(validations, containerBound())  // policy_updatebounds.go
	validations = append(validations, countBounds()...)  // policy_updatebounds.go
	p := podUpdatePolicy(LabelsPolicyName, vars, validations)
	// Creates too, in place of a webhook call for every new labelled pod.
	p.Spec.MatchConstraints.ResourceRules = append(p.Spec.MatchConstraints.ResourceRules, policyPodRules(admissionregistrationv1.Create, "pods")...)
	// The binding narrows this to Muster's namespaces.
	p.Spec.MatchConstraints.ObjectSelector = objectSelector()
	return p
}

// podUpdatePolicy is a policy that checks validations on updates of pods,
// through pods and pods/status, failing closed.
func podUpdatePolicy(name string, vars []admissionregistrationv1.Variable, validations []admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := failClosedPolicy(name, policyPodRules(admissionregistrationv1.Update, "pods", "pods/status"), nil, validations)
	p.Spec.Variables = vars
	return p
}

// immutableLabel is the validation that forbids adding, changing or removing
// the label key on update, with the messages the webhook's validateLabelImmutable gives;
// v names the variables new<v> and old<v> that hold the label's value.
func immutableLabel(v, key, why string) admissionregistrationv1.Validation {
	newV, oldV := "variables.new"+v, "variables.old"+v
	prefix := fmt.Sprintf("metadata.labels[%s]: ", key)
	return admissionregistrationv1.Validation{
		Expression: "oldObject == null || " + newV + " == " + oldV,
		MessageExpression: fmt.Sprintf("%[2]s.size() == 0 ? %[3]s : %[1]s.size() == 0 ? %[4]s + %[2]s[0] + '\")' : "+
			"%[5]s + %[1]s[0] + %[6]s + %[2]s[0] + '\")'",
			newV, oldV,
			celString(prefix+"Forbidden: cannot be added to an existing pod: "+why),
			celString(prefix+`Forbidden: cannot be removed: the label is immutable once set (it was "`),
			celString(prefix+`Invalid value: "`),
			celString(`": field is immutable: the label cannot change once set (it was "`)),
		Reason: ptr.To(metav1.StatusReasonInvalid),
	}
}

// invalidMessage is a messageExpression in field.Invalid's format for the
// value expression value of key in the map at path.
func invalidMessage(path, key, value, detail string) string {
	return fmt.Sprintf(`%s + %s + '": ' + %s`, celString(fmt.Sprintf(`%s[%s]: Invalid value: "`, path, key)), value, celString(detail))
}

// policyPodRules matches operation op on the pods resources named.
func policyPodRules(op admissionregistrationv1.OperationType, resources ...string) []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{op},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   resources,
			Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}}
}

// PolicyBinding binds policy to the pods of the namespaces c selects, the
// same namespaces as the webhooks and the controller, and denies what it
// rejects.
func PolicyBinding(c Config, policy string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: c.namespaceSelector()},
		},
	}
}
