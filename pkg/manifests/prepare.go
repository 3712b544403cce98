package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// PreparePolicyName names the MutatingAdmissionPolicy, and its binding, that
// prepare a new labelled pod inside kube-apiserver: the admission gate, the
// tracking finalizer and the managed label, as the mutating webhook adds
// them (pkg/webhook/pods/mutate.go). The labels map is always there: the policy matches pods
// with the group label only. MutatingAdmissionPolicy is GA, and on by default, since
// Kubernetes 1.36. kube-apiserver runs policies before webhooks, and the
// mutating webhook's match condition (notPrepared) skips a pod that already
// has all three, so on such a cluster a labelled pod's create makes no
// network call for its mutation; on an older one the webhook does the work.
// It is opt-in (PreparePolicyFile): make perf measured it slower than
// the webhook on a 2-core machine, where kube-apiserver's CPU is what a
// create waits on (docs/performance.md).
const PreparePolicyName = "muster-pod-prepare"

// preparedExpression holds when a pod has the gate, the finalizer and the
// managed label that Muster adds at creation.
var preparedExpression = fmt.Sprintf(
	"%s && %s && %s == [%s]",
	celHasGate("object", scheduling.AdmissionGate),
	celListHas("object", "metadata.finalizers", celString(scheduling.TrackingFinalizer)),
	celKeyOpt("object", "metadata.labels", scheduling.ManagedLabel), celString("true"))

// unboundExpression holds when a pod is not bound at creation: the API
// rejects a pod with both nodeName and scheduling gates, so such a pod is
// left to the webhook, which tells its author that it is not held.
const unboundExpression = "!has(object.spec.nodeName) || object.spec.nodeName == ''"

// PreparePolicy returns the policy that adds, by JSON patch, the admission
// gate, the tracking finalizer and the managed label to a new pod with the
// group label that is not bound: each only where it is missing, appended
// after what the pod's author or another writer put there, as the webhook's
// patch does (pkg/webhook/pods/mutate.go). A JSON patch costs kube-apiserver less than an
// apply configuration, which goes through a server-side apply merge.
func PreparePolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	gate, finalizer := celString(scheduling.AdmissionGate), celString(scheduling.TrackingFinalizer)
	patch := fmt.Sprintf(`(%[1]s ? [] :
  has(object.spec.schedulingGates) ?
    [JSONPatch{op: "add", path: "/spec/schedulingGates/-", value: Object.spec.schedulingGates{name: %[2]s}}] :
    [JSONPatch{op: "add", path: "/spec/schedulingGates", value: [Object.spec.schedulingGates{name: %[2]s}]}]) +
(%[3]s ? [] :
  has(object.metadata.finalizers) ?
    [JSONPatch{op: "add", path: "/metadata/finalizers/-", value: %[4]s}] :
    [JSONPatch{op: "add", path: "/metadata/finalizers", value: [%[4]s]}]) +
[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey(%[5]s), value: %[6]s}]`,
		celHasGate("object", scheduling.AdmissionGate), gate, celListHas("object", "metadata.finalizers", finalizer), finalizer,
		celString(scheduling.ManagedLabel), celString("true"))
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PreparePolicyName},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy:    ptr.To(admissionregistrationv1.Equivalent),
				ObjectSelector: objectSelector(),
				ResourceRules:  policyPodRules(admissionregistrationv1.Create, "pods"),
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "unbound", Expression: unboundExpression},
				{Name: "not-prepared", Expression: "!(" + preparedExpression + ")"},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: patch},
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// PreparePolicyBinding binds PreparePolicy to the pods of the namespaces c
// selects, the same namespaces as the webhooks and the controller.
func PreparePolicyBinding(c Config) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: PreparePolicyName},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     PreparePolicyName,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: c.namespaceSelector()},
		},
	}
}
