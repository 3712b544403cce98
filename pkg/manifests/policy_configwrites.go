package manifests

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ConfigWritesPolicyName names the ValidatingAdmissionPolicy, and its
// binding, that confine Muster's writes to its webhook configurations and
// its APIService to the CA bundle it publishes (pkg/certs, publish.go).
const ConfigWritesPolicyName = "muster-config-writes"

// webhookFields are the fields of a webhook in a webhook configuration,
// other than clientConfig.caBundle, that Muster may not change.
var webhookFields = []string{
	"clientConfig.url", "clientConfig.service", "rules", "failurePolicy", "matchPolicy",
	"namespaceSelector", "objectSelector", "sideEffects", "timeoutSeconds",
	"admissionReviewVersions", "matchConditions", "reinvocationPolicy",
}

// apiServiceFields are the fields of an APIService's spec, other than
// caBundle and insecureSkipTLSVerify, that Muster may not change.
var apiServiceFields = []string{"service", "group", "version", "groupPriorityMinimum", "versionPriority"}

// ConfigWritesPolicy returns the policy that lets Muster's controller
// update its webhook configurations and its APIService only to publish its
// CA bundle. RBAC grants the update of those objects by name, whole:
// without this, Muster's credentials could point the pod webhook at every
// resource in the cluster (Secrets included, sent in each review) or at a
// server of their own, or the APIService at another Service.
//
// On a webhook configuration, each webhook keeps its name and every field
// but clientConfig.caBundle (webhookFields); none is added or removed. On
// the APIService, the spec keeps every field but caBundle
// (apiServiceFields), and insecureSkipTLSVerify may go but never be set.
// On both, the labels, annotations, owner references and finalizers stay.
// Objects are read through dyn(): one policy matches three kinds, and
// kube-apiserver's type checker would report the other kinds' fields.
func ConfigWritesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	deny := func(expr, fieldPath, msg string) admissionregistrationv1.Validation {
		return admissionregistrationv1.Validation{
			Expression: expr,
			Message: fmt.Sprintf("%s: Forbidden: %s may only change the CA bundle of its webhook configurations and its APIService; %s",
				fieldPath, musterWho, msg),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		}
	}
	isWebhooks := "request.resource.group == 'admissionregistration.k8s.io'"
	var same []string
	for _, f := range webhookFields {
		same = append(same, celOpt("w", f)+" == "+celOpt("o", f))
	}
	webhooks := func(root string) string {
		return fmt.Sprintf("(has(dyn(%[1]s).webhooks) ? dyn(%[1]s).webhooks : [])", root)
	}
	var specSame []string
	for _, f := range apiServiceFields {
		specSame = append(specSame, celOpt("dyn(object).spec", f)+" == "+celOpt("dyn(oldObject).spec", f))
	}
	validations := []admissionregistrationv1.Validation{
		deny(celUnchanged("metadata.labels"), "metadata.labels", "it may not change this field"),
		deny(celUnchanged("metadata.annotations"), "metadata.annotations", "it may not change this field"),
		deny(celUnchanged("metadata.ownerReferences"), "metadata.ownerReferences", "it may not change this field"),
		deny(celUnchanged("metadata.finalizers"), "metadata.finalizers", "it may not change this field"),
		deny(fmt.Sprintf("!(%[1]s) || (size(%[2]s) == size(%[3]s) && %[2]s.all(w, %[3]s.exists(o, o.name == w.name && %[4]s)))",
			isWebhooks, webhooks("object"), webhooks("oldObject"), strings.Join(same, " && ")),
			"webhooks", "each webhook keeps its name and every field but clientConfig.caBundle, and none is added or removed"),
		deny(fmt.Sprintf("%s || (%s)", isWebhooks, strings.Join(specSame, " && ")),
			"spec", "the APIService keeps every field of its spec but caBundle"),
		deny(fmt.Sprintf("%s || !has(dyn(object).spec.insecureSkipTLSVerify) || !dyn(object).spec.insecureSkipTLSVerify", isWebhooks),
			"spec.insecureSkipTLSVerify", "it may remove it, never set it"),
	}
	rule := func(group string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{group},
				APIVersions: []string{"v1"},
				Resources:   resources,
				Scope:       ptr.To(admissionregistrationv1.ClusterScope),
			},
		}}
	}
	return failClosedPolicy(ConfigWritesPolicyName,
		[]admissionregistrationv1.NamedRuleWithOperations{
			rule("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "validatingwebhookconfigurations"),
			rule("apiregistration.k8s.io", "apiservices"),
		},
		[]admissionregistrationv1.MatchCondition{{Name: "muster-controller", Expression: celIsMuster()}},
		validations)
}

// ConfigWritesPolicyBinding binds ConfigWritesPolicy cluster-wide: the
// objects it guards have no namespace.
func ConfigWritesPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := PolicyBinding(Config{}, ConfigWritesPolicyName)
	b.Spec.MatchResources = nil
	return b
}
