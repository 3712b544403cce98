package manifests

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Names of the webhook configurations and of the webhooks in them.
const (
	// ConfigurationName names both the mutating and the validating configuration.
	ConfigurationName = "muster-pod-webhook"
	// MutatingWebhookName names the webhook that gates new pods.
	MutatingWebhookName = "mutate.pods.scheduling.muster.dev"
	// ValidatingWebhookName names the webhook that checks Muster's labels and annotations.
	ValidatingWebhookName = "validate.pods.scheduling.muster.dev"
)

// Paths on which muster-apiserver serves the webhook, and which the
// configurations name.
const (
	// MutatePath serves the mutating webhook.
	MutatePath = "/webhooks/pods/mutate"
	// ValidatePath serves the validating webhook.
	ValidatePath = "/webhooks/pods/validate"
)

// DefaultPort is the port muster-apiserver serves the webhook on by default
// (--webhook-port), apart from the API's secure port, and the port of the
// Service WebhookService in the artifacts.
const DefaultPort = 9443

// WebhookService is the chart's Service of the webhook's own Deployment
// (muster-apiserver --webhook-only), which the configurations call.
const WebhookService = "muster-webhook"

// timeoutSeconds bounds each call: a pod create waits on the webhook, and
// with failurePolicy Fail a slow webhook is a failed create.
const timeoutSeconds = 10

// ServiceReference locates the webhook by an in-cluster Service.
type ServiceReference struct {
	Namespace string
	Name      string
	// Port is the Service port; 0 means 443.
	Port int32
}

// Config says where kube-apiserver reaches the webhook, and for which pods.
type Config struct {
	// Service locates the webhook in the cluster. Exactly one of Service and
	// URL is set.
	Service *ServiceReference
	// URL is the base URL of the server, such as https://127.0.0.1:8443; the
	// webhook paths are appended to it. It must be https, with no query,
	// fragment or user info.
	URL string
	// CABundle holds the PEM certificates that verify the server. Empty means
	// kube-apiserver's system roots, or a bundle injected later (for example
	// by cert-manager's CA injector).
	CABundle []byte
	// NamespaceSelector limits the webhook to matching namespaces; nil means
	// DefaultNamespaceSelector.
	NamespaceSelector *metav1.LabelSelector
	// ValidateUpdates sends pod updates, and every labelled create, to the
	// validating webhook. Set it only on clusters that do not serve
	// ValidatingAdmissionPolicy: where they do, LabelsPolicy checks creates
	// and updates inside kube-apiserver, pod updates (Muster's own gate and
	// finalizer patches, and a user's removal of the finalizer) never wait
	// on, or fail with, a Muster replica, and the webhook is called only for
	// the creates that carry what CEL cannot check (RolesExpression).
	ValidateUpdates bool
}

// DefaultNamespaceSelector is the controller's default selector,
// scheduling.DefaultNamespaceSelector, as a webhook's namespaceSelector: the
// webhook sees the pods of exactly the namespaces the controller manages.
func DefaultNamespaceSelector() *metav1.LabelSelector {
	sel, err := metav1.ParseToLabelSelector(scheduling.DefaultNamespaceSelector)
	if err != nil {
		panic(fmt.Sprintf("parsing the default namespace selector %q: %v", scheduling.DefaultNamespaceSelector, err))
	}
	// An empty map and a nil one mean the same, but only nil survives a
	// round trip through YAML unchanged.
	sel.MatchLabels = nil
	return sel
}

// MutatingWebhookConfiguration returns the configuration that sends pod
// creates with the group label to MutatePath.
func MutatingWebhookConfiguration(c Config) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	client, err := c.clientConfig(MutatePath)
	if err != nil {
		return nil, err
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    MutatingWebhookName,
			ClientConfig:            client,
			Rules:                   podRules(admissionregistrationv1.Create),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       c.namespaceSelector(),
			ObjectSelector:          objectSelector(),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](timeoutSeconds),
			AdmissionReviewVersions: []string{admissionregistrationv1.SchemeGroupVersion.Version},
			// The patch only adds and never needs to see another webhook's changes.
			ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			// Where PreparePolicy ran first (kube-apiserver runs policies
			// before webhooks), the pod has nothing left to add, and is not
			// called for unless its group is named by instance.
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: NeedsMutationConditionName, Expression: NeedsMutationExpression}},
		}},
	}, nil
}

// NeedsMutationConditionName names the mutating webhook's match condition,
// NeedsMutationExpression.
const NeedsMutationConditionName = "needs-mutation"

// NeedsMutationExpression holds for a new labelled pod that the mutating
// webhook has work on: it lacks the gate, the finalizer or the managed
// label (PreparePolicy, where it runs, adds them first), or its group is
// named after its workload instance (scheduling.GroupByAnnotation), which
// only the webhook does; and its gates and finalizers are within their
// bounds (countsBounded).
var NeedsMutationExpression = fmt.Sprintf("%s && (!(%s) || (has(object.metadata.annotations) && %s in object.metadata.annotations))",
	countsBounded, preparedExpression, celString(scheduling.GroupByAnnotation))

// countsBounded holds when a pod's scheduling gates and finalizers are
// within scheduling.MaxPodSchedulingGates and MaxPodFinalizers. Neither
// webhook is sent a pod past them: muster-pod-labels refuses it, naming
// the list, and its review (whose managed fields name every item) could
// be past the webhook's MaxRequestBytes, refused with no field named.
var countsBounded = fmt.Sprintf("size(%s) <= %d && size(%s) <= %d",
	celList("object", "spec.schedulingGates"), scheduling.MaxPodSchedulingGates, celList("object", "metadata.finalizers"), scheduling.MaxPodFinalizers)

// ValidatingWebhookConfiguration returns the configuration that sends pod
// creates with the group label to ValidatePath, and updates too when
// c.ValidateUpdates is set.
func ValidatingWebhookConfiguration(c Config) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	client, err := c.clientConfig(ValidatePath)
	if err != nil {
		return nil, err
	}
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	var conditions []admissionregistrationv1.MatchCondition
	if c.ValidateUpdates {
		ops = append(ops, admissionregistrationv1.Update)
	} else {
		conditions = []admissionregistrationv1.MatchCondition{{Name: GoChecksConditionName, Expression: GoChecksExpression}}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    ValidatingWebhookName,
			ClientConfig:            client,
			Rules:                   podRules(ops...),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       c.namespaceSelector(),
			ObjectSelector:          objectSelector(),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](timeoutSeconds),
			AdmissionReviewVersions: []string{admissionregistrationv1.SchemeGroupVersion.Version},
			MatchConditions:         conditions,
		}},
	}, nil
}

// GoChecksConditionName names the validating webhook's match condition,
// GoChecksExpression.
const GoChecksConditionName = "needs-go-checks"

// GoChecksExpression holds for the creates that the validating webhook checks
// where LabelsPolicy checks the rest: pods with roles (RolesExpression) and
// pods whose scheduling inputs may be over their bound
// (SchedulingExpression), within the bounds on their gates and finalizers
// (countsBounded).
var GoChecksExpression = countsBounded + " && ((" + RolesExpression + ") || (" + SchedulingExpression + "))"

// RolesExpression holds for a pod that carries the role label or an
// annotation about roles: those the validating webhook checks in Go (roles
// templates are JSON), and LabelsPolicy checks the rest.
var RolesExpression = fmt.Sprintf("(has(object.metadata.labels) && %s in object.metadata.labels) || "+
	"(has(object.metadata.annotations) && [%s, %s, %s].exists(k, k in object.metadata.annotations))",
	celString(scheduling.RoleLabel), celString(scheduling.RolesAnnotation), celString(scheduling.RoleCountAnnotation), celString(scheduling.RolesTemplateAnnotation))

// SchedulingExpression holds for a labelled pod whose scheduling inputs may
// be over scheduling.MaxPodSchedulingBytes, or its labels over
// scheduling.MaxPodLabelBytes, which only Go measures: it has an affinity,
// topology spread constraints, more tolerations than
// scheduling.SchedulingCheckTolerations, more nodeSelector entries than
// scheduling.NodeSelectorCheckCount or more labels than
// scheduling.LabelCheckCount. The validating webhook is called for those
// creates and no others but the pods with roles.
var SchedulingExpression = fmt.Sprintf("has(object.spec.affinity) || "+
	"(has(object.spec.topologySpreadConstraints) && size(object.spec.topologySpreadConstraints) > 0) || "+
	"(has(object.spec.tolerations) && size(object.spec.tolerations) > %d) || "+
	"(has(object.spec.nodeSelector) && size(object.spec.nodeSelector) > %d) || "+
	"(has(object.metadata.labels) && size(object.metadata.labels) > %d)", scheduling.SchedulingCheckTolerations, scheduling.NodeSelectorCheckCount, scheduling.LabelCheckCount)

// clientConfig points kube-apiserver at path on the configured server.
func (c Config) clientConfig(path string) (admissionregistrationv1.WebhookClientConfig, error) {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: c.CABundle}
	switch {
	case c.Service != nil && c.URL != "":
		return cc, errors.New("webhook config: set either a service or a URL, not both")
	case c.Service != nil:
		s := c.Service
		if s.Namespace == "" || s.Name == "" {
			return cc, errors.New("webhook config: the service needs a namespace and a name")
		}
		if s.Port < 0 || s.Port > 65535 {
			return cc, fmt.Errorf("webhook config: service port %d is out of range", s.Port)
		}
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: s.Namespace, Name: s.Name, Path: ptr.To(path)}
		if s.Port != 0 {
			cc.Service.Port = ptr.To(s.Port)
		}
		return cc, nil
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil {
			return cc, fmt.Errorf("webhook config: parsing URL: %w", err)
		}
		// The rules kube-apiserver applies to webhook URLs.
		if u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
			return cc, fmt.Errorf("webhook config: URL %q must be https://host[:port][/prefix], with no user info, query or fragment", c.URL)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + path
		u.RawPath = ""
		cc.URL = ptr.To(u.String())
		return cc, nil
	default:
		return cc, errors.New("webhook config: set a service or a URL")
	}
}

func (c Config) namespaceSelector() *metav1.LabelSelector {
	if c.NamespaceSelector == nil {
		return DefaultNamespaceSelector()
	}
	return c.NamespaceSelector.DeepCopy()
}

// objectSelector sends only pods that carry the group label, so that pods
// that are not Muster's never wait on the webhook, or fail with it. On
// update, kube-apiserver matches the old object or the new one, so adding or
// removing the label is still seen.
func objectSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key:      scheduling.PodGroupLabel,
		Operator: metav1.LabelSelectorOpExists,
	}}}
}

// podRules matches the pods resource itself, not its subresources: the
// kubelet's status writes and bindings never reach the webhook.
func podRules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{""},
			APIVersions: []string{"v1"},
			Resources:   []string{"pods"},
			Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}
}
