package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// OrderedReadyPolicyName names the ValidatingAdmissionPolicy, and its
// binding, that warn at creation of a StatefulSet that can never form a
// gang: the controller says the same on the group (Admitted=False, reason
// scheduling.ReasonOrderedReadyStatefulSet), but only once a pod exists and
// waits.
const OrderedReadyPolicyName = "muster-statefulset-ordered-ready"

// OrderedReadyPolicy returns the policy that warns (never denies: the
// binding's only action is Warn, and a failure to evaluate is ignored) on
// every create and update of an apps/v1 StatefulSet whose pod template
// carries the group label and whose podManagementPolicy is OrderedReady,
// or unset, which kube-apiserver defaults to OrderedReady before admission.
// A template that asks for a gang of one (min-count "1") is left alone. The
// field is immutable, so an update warns again, which is the reminder a
// user who re-applies the manifest needs.
func OrderedReadyPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	template := "object.spec.template.metadata"
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: OrderedReadyPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups:   []string{appsv1.GroupName},
						APIVersions: []string{appsv1.SchemeGroupVersion.Version},
						Resources:   []string{"statefulsets"},
						Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
					},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "pod-group-template",
				Expression: fmt.Sprintf("has(%[1]s) && has(%[1]s.labels) && '%[2]s' in %[1]s.labels",
					template, scheduling.PodGroupLabel),
			}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("(has(object.spec.podManagementPolicy) && object.spec.podManagementPolicy == '%[1]s') || "+
					"(has(%[2]s.annotations) && '%[3]s' in %[2]s.annotations && %[2]s.annotations['%[3]s'] == '1')",
					appsv1.ParallelPodManagement, template, scheduling.MinCountAnnotation),
				Message: fmt.Sprintf("spec.podManagementPolicy: OrderedReady (the default) creates each pod only once the one before it is Ready, "+
					"but Muster keeps every pod of a group (label %s) gated until the group's minCount pods exist, "+
					"so a gang of more than one pod can never form; %s", scheduling.PodGroupLabel, scheduling.OrderedReadyFix),
			}},
		},
	}
}

// OrderedReadyPolicyBinding binds OrderedReadyPolicy, with the action Warn
// only, in the namespaces Muster manages by default
// (scheduling.DefaultNamespaceSelector), where its webhook gates pods.
func OrderedReadyPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: OrderedReadyPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        OrderedReadyPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: DefaultNamespaceSelector()},
		},
	}
}
