package manifests

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

var testCA = []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")

func TestWebhookConfigurations(t *testing.T) {
	cfg := Config{URL: "https://127.0.0.1:8443", CABundle: testCA}
	m, err := MutatingWebhookConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ValidatingWebhookConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fallbackCfg := cfg
	fallbackCfg.ValidateUpdates = true
	fallback, err := ValidatingWebhookConfiguration(fallbackCfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != ConfigurationName || v.Name != ConfigurationName {
		t.Errorf("names %q and %q, want %q", m.Name, v.Name, ConfigurationName)
	}
	if m.Kind != "MutatingWebhookConfiguration" || v.Kind != "ValidatingWebhookConfiguration" || m.APIVersion != "admissionregistration.k8s.io/v1" {
		t.Errorf("type meta %+v and %+v", m.TypeMeta, v.TypeMeta)
	}
	if len(m.Webhooks) != 1 || len(v.Webhooks) != 1 {
		t.Fatalf("want one webhook each, got %d and %d", len(m.Webhooks), len(v.Webhooks))
	}
	mw, vw, fw := m.Webhooks[0], v.Webhooks[0], fallback.Webhooks[0]
	if *mw.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("reinvocationPolicy %v", *mw.ReinvocationPolicy)
	}
	// Where LabelsPolicy checks creates, only a pod with roles, or with
	// scheduling inputs that may be over their bound, is sent to the
	// validating webhook; without the policy, every labelled pod is.
	if want := []admissionregistrationv1.MatchCondition{{Name: GoChecksConditionName, Expression: GoChecksExpression}}; !reflect.DeepEqual(vw.MatchConditions, want) {
		t.Errorf("validating matchConditions %+v, want %+v", vw.MatchConditions, want)
	}
	if len(fw.MatchConditions) != 0 {
		t.Errorf("fallback validating matchConditions %+v, want none", fw.MatchConditions)
	}

	podGroupExists := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "scheduling.muster.dev/pod-group", Operator: metav1.LabelSelectorOpExists}}}
	common := []struct {
		name              string
		whName            string
		client            admissionregistrationv1.WebhookClientConfig
		rules             []admissionregistrationv1.RuleWithOperations
		failure           *admissionregistrationv1.FailurePolicyType
		match             *admissionregistrationv1.MatchPolicyType
		ns, obj           *metav1.LabelSelector
		sideEffects       *admissionregistrationv1.SideEffectClass
		timeout           *int32
		versions          []string
		wantName, wantURL string
		wantOps           []admissionregistrationv1.OperationType
	}{
		{"mutating", mw.Name, mw.ClientConfig, mw.Rules, mw.FailurePolicy, mw.MatchPolicy, mw.NamespaceSelector, mw.ObjectSelector, mw.SideEffects, mw.TimeoutSeconds, mw.AdmissionReviewVersions,
			MutatingWebhookName, "https://127.0.0.1:8443/webhooks/pods/mutate", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}},
		{"validating", vw.Name, vw.ClientConfig, vw.Rules, vw.FailurePolicy, vw.MatchPolicy, vw.NamespaceSelector, vw.ObjectSelector, vw.SideEffects, vw.TimeoutSeconds, vw.AdmissionReviewVersions,
			ValidatingWebhookName, "https://127.0.0.1:8443/webhooks/pods/validate", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}},
		// On a cluster without ValidatingAdmissionPolicy, the webhook checks updates too.
		{"validating fallback", fw.Name, fw.ClientConfig, fw.Rules, fw.FailurePolicy, fw.MatchPolicy, fw.NamespaceSelector, fw.ObjectSelector, fw.SideEffects, fw.TimeoutSeconds, fw.AdmissionReviewVersions,
			ValidatingWebhookName, "https://127.0.0.1:8443/webhooks/pods/validate", []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}},
	}
	for _, w := range common {
		t.Run(w.name, func(t *testing.T) {
			if w.whName != w.wantName || strings.Count(w.whName, ".") < 2 {
				t.Errorf("webhook name %q, want the fully qualified %q", w.whName, w.wantName)
			}
			if w.client.URL == nil || *w.client.URL != w.wantURL || w.client.Service != nil {
				t.Errorf("client config %+v, want URL %s", w.client, w.wantURL)
			}
			if string(w.client.CABundle) != string(testCA) {
				t.Errorf("caBundle %q", w.client.CABundle)
			}
			wantRules := []admissionregistrationv1.RuleWithOperations{{
				Operations: w.wantOps,
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}}
			if !reflect.DeepEqual(w.rules, wantRules) {
				t.Errorf("rules %+v, want %+v", w.rules, wantRules)
			}
			if *w.failure != admissionregistrationv1.Fail {
				t.Errorf("failurePolicy %v, want Fail", *w.failure)
			}
			if *w.match != admissionregistrationv1.Equivalent {
				t.Errorf("matchPolicy %v, want Equivalent", *w.match)
			}
			if *w.sideEffects != admissionregistrationv1.SideEffectClassNone {
				t.Errorf("sideEffects %v, want None", *w.sideEffects)
			}
			if *w.timeout != 10 {
				t.Errorf("timeoutSeconds %d, want 10", *w.timeout)
			}
			if !reflect.DeepEqual(w.versions, []string{"v1"}) {
				t.Errorf("admissionReviewVersions %q, want [v1]", w.versions)
			}
			if !reflect.DeepEqual(w.ns, DefaultNamespaceSelector()) {
				t.Errorf("namespaceSelector %+v, want the default", w.ns)
			}
			if !reflect.DeepEqual(w.obj, podGroupExists) {
				t.Errorf("objectSelector %+v, want %+v", w.obj, podGroupExists)
			}
		})
	}
}

func TestClientConfig(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		wantURL     string
		wantService *admissionregistrationv1.ServiceReference
		wantErr     string
	}{
		{name: "a base URL gets the path", cfg: Config{URL: "https://127.0.0.1:8443"}, wantURL: "https://127.0.0.1:8443/webhooks/pods/mutate"},
		{name: "a trailing slash is not doubled", cfg: Config{URL: "https://example.com/"}, wantURL: "https://example.com/webhooks/pods/mutate"},
		{name: "a path prefix is kept", cfg: Config{URL: "https://example.com/muster"}, wantURL: "https://example.com/muster/webhooks/pods/mutate"},
		{name: "a service gets the path and default port", cfg: Config{Service: &ServiceReference{Namespace: "muster-system", Name: "muster-apiserver"}},
			wantService: &admissionregistrationv1.ServiceReference{Namespace: "muster-system", Name: "muster-apiserver", Path: ptr.To(MutatePath)}},
		{name: "a service port is kept", cfg: Config{Service: &ServiceReference{Namespace: "muster-system", Name: "muster-apiserver", Port: 8443}},
			wantService: &admissionregistrationv1.ServiceReference{Namespace: "muster-system", Name: "muster-apiserver", Path: ptr.To(MutatePath), Port: ptr.To[int32](8443)}},

		{name: "a service or a URL is required", cfg: Config{}, wantErr: "set a service or a URL"},
		{name: "not both", cfg: Config{URL: "https://a", Service: &ServiceReference{Namespace: "n", Name: "s"}}, wantErr: "not both"},
		{name: "a service needs a name", cfg: Config{Service: &ServiceReference{Namespace: "n"}}, wantErr: "namespace and a name"},
		{name: "a service port must be in range", cfg: Config{Service: &ServiceReference{Namespace: "n", Name: "s", Port: 70000}}, wantErr: "out of range"},
		{name: "a URL must be https", cfg: Config{URL: "http://127.0.0.1:8443"}, wantErr: "must be https"},
		{name: "a URL needs a host", cfg: Config{URL: "https:///x"}, wantErr: "must be https"},
		{name: "a URL takes no query", cfg: Config{URL: "https://a/?x=1"}, wantErr: "must be https"},
		{name: "a URL takes no fragment", cfg: Config{URL: "https://a/#x"}, wantErr: "must be https"},
		{name: "a URL takes no user", cfg: Config{URL: "https://u:p@a/"}, wantErr: "must be https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := MutatingWebhookConfiguration(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if _, err := ValidatingWebhookConfiguration(tt.cfg); err == nil {
					t.Error("the validating configuration accepted what the mutating one refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cc := m.Webhooks[0].ClientConfig
			if tt.wantURL != "" && (cc.URL == nil || *cc.URL != tt.wantURL) {
				t.Errorf("URL %v, want %s", ptr.Deref(cc.URL, "<nil>"), tt.wantURL)
			}
			if !reflect.DeepEqual(cc.Service, tt.wantService) {
				t.Errorf("service %+v, want %+v", cc.Service, tt.wantService)
			}
		})
	}
}

func TestNamespaceSelector(t *testing.T) {
	parsed, err := parseNamespaceSelector(scheduling.DefaultNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed, DefaultNamespaceSelector()) {
		t.Errorf("parseNamespaceSelector(scheduling.DefaultNamespaceSelector) = %+v, want DefaultNamespaceSelector() %+v", parsed, DefaultNamespaceSelector())
	}
	want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key:      corev1.LabelMetadataName,
		Operator: metav1.LabelSelectorOpNotIn,
		Values:   []string{"kube-system", "muster-system"},
	}}}
	if !reflect.DeepEqual(DefaultNamespaceSelector(), want) {
		t.Errorf("DefaultNamespaceSelector() = %+v, want %+v", DefaultNamespaceSelector(), want)
	}

	sel, err := metav1.LabelSelectorAsSelector(DefaultNamespaceSelector())
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"default": true, "team-a": true, "kube-system": false, "muster-system": false} {
		if got := sel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}); got != want {
			t.Errorf("default selector matches namespace %s = %v, want %v", ns, got, want)
		}
	}

	custom := &metav1.LabelSelector{MatchLabels: map[string]string{"muster.dev/gangs": "on"}}
	m, err := MutatingWebhookConfiguration(Config{URL: "https://a", NamespaceSelector: custom})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Webhooks[0].NamespaceSelector, custom) || m.Webhooks[0].NamespaceSelector == custom {
		t.Errorf("namespaceSelector %+v, want a copy of %+v", m.Webhooks[0].NamespaceSelector, custom)
	}

	all, err := parseNamespaceSelector("")
	if err != nil || len(all.MatchLabels)+len(all.MatchExpressions) != 0 {
		t.Errorf("parseNamespaceSelector(\"\") = %+v, %v; want an empty selector", all, err)
	}
	if _, err := parseNamespaceSelector("a in (b"); err == nil {
		t.Error("parseNamespaceSelector accepted a malformed selector")
	}
}

// parseNamespaceSelector parses a namespace selector flag as a webhook's
// namespaceSelector. The empty string matches all namespaces.
func parseNamespaceSelector(s string) (*metav1.LabelSelector, error) {
	sel, err := metav1.ParseToLabelSelector(s)
	if err != nil {
		return nil, fmt.Errorf("parsing namespace selector %q: %w", s, err)
	}
	if len(sel.MatchLabels) == 0 {
		sel.MatchLabels = nil
	}
	return sel, nil
}
