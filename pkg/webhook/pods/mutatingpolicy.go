package pods

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
// them (mutate.go). MutatingAdmissionPolicy is GA, and on by default, since
// Kubernetes 1.36. kube-apiserver runs policies before webhooks, and the
// mutating webhook's match condition (notPrepared) skips a pod that already
// has all three, so on such a cluster a labelled pod's create makes no
// network call for its mutation; on an older one the webhook does the work.
const PreparePolicyName = "muster-pod-prepare"

// preparedExpression holds when a pod has the gate, the finalizer and the
// managed label that Muster adds at creation.
var preparedExpression = fmt.Sprintf(
	"%s.exists(g, g.name == %s) && %s.exists(f, f == %s) && %s == [%s]",
	celList("object", "spec.schedulingGates"), celString(scheduling.AdmissionGate),
	celList("object", "metadata.finalizers"), celString(scheduling.TrackingFinalizer),
	celKeyOpt("object", "metadata.labels", scheduling.ManagedLabel), celString("true"))

// unboundExpression holds when a pod is not bound at creation: the API
// rejects a pod with both nodeName and scheduling gates, so such a pod is
// left to the webhook, which tells its author that it is not held.
const unboundExpression = "!has(object.spec.nodeName) || object.spec.nodeName == ''"

// PreparePolicy returns the policy that adds, by server-side apply, the
// admission gate, the tracking finalizer and the managed label to a new pod
// with the group label that is not bound. Apply merges: schedulingGates is a
// map keyed by name and finalizers a set, so what the pod's author or another
// writer put there stays, and nothing is added twice.
func PreparePolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	apply := fmt.Sprintf(`Object{
  metadata: Object.metadata{
    labels: {%s: %s},
    finalizers: [%s]
  },
  spec: Object.spec{
    schedulingGates: [Object.spec.schedulingGates{name: %s}]
  }
}`, celString(scheduling.ManagedLabel), celString("true"), celString(scheduling.TrackingFinalizer), celString(scheduling.AdmissionGate))
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PreparePolicyName},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy:    ptr.To(admissionregistrationv1.Equivalent),
				ObjectSelector: objectSelector(),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
						Scope: ptr.To(admissionregistrationv1.NamespacedScope),
					},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "unbound", Expression: unboundExpression},
				{Name: "not-prepared", Expression: "!(" + preparedExpression + ")"},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: apply},
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
