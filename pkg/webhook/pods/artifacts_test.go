package pods

import (
	"os"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"

	"github.com/muster-dev/muster/pkg/controller/podgroup"
)

// TestArtifactsMatchBuilder keeps artifacts/base/webhooks.yaml, which
// deployments apply, in step with the configurations this package builds
// for the local cluster: the same webhooks, rules and selectors.
func TestArtifactsMatchBuilder(t *testing.T) {
	data, err := os.ReadFile("../../../artifacts/base/webhooks.yaml")
	if err != nil {
		t.Fatalf("reading artifacts: %v", err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("webhooks.yaml has %d documents, want 2", len(docs))
	}
	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &mutating); err != nil {
		t.Fatalf("decoding the mutating configuration: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &validating); err != nil {
		t.Fatalf("decoding the validating configuration: %v", err)
	}
	cfg := Config{
		Service:  &ServiceReference{Namespace: "muster-system", Name: "muster-apiserver", Port: 443},
		CABundle: mutating.Webhooks[0].ClientConfig.CABundle,
	}
	wantM, err := MutatingWebhookConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantV, err := ValidatingWebhookConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mutating.Annotations, validating.Annotations = nil, nil
	if !apiequality.Semantic.DeepEqual(wantM.Webhooks, mutating.Webhooks) {
		t.Errorf("mutating webhooks differ from the builder:\n%s", diff.Diff(wantM.Webhooks, mutating.Webhooks))
	}
	if !apiequality.Semantic.DeepEqual(wantV.Webhooks, validating.Webhooks) {
		t.Errorf("validating webhooks differ from the builder:\n%s", diff.Diff(wantV.Webhooks, validating.Webhooks))
	}
}

// TestPolicyArtifactsMatchBuilder keeps artifacts/base/policies.yaml in step
// with the policies and bindings this package builds for the local cluster.
func TestPolicyArtifactsMatchBuilder(t *testing.T) {
	data, err := os.ReadFile("../../../artifacts/base/policies.yaml")
	if err != nil {
		t.Fatalf("reading artifacts: %v", err)
	}
	docs := strings.Split(string(data), "\n---\n")
	want := []any{
		LabelsPolicy(),
		PolicyBinding(Config{}, LabelsPolicyName),
		WritesPolicy("muster-system", "muster-apiserver"),
		WritesPolicyBinding(),
		podgroup.OrderedReadyPolicy(),
		podgroup.OrderedReadyPolicyBinding(),
	}
	if len(docs) != len(want) {
		t.Fatalf("policies.yaml has %d documents, want %d", len(docs), len(want))
	}
	for i, w := range want {
		var got any
		switch w.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			got = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		default:
			got = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		}
		if err := yaml.UnmarshalStrict([]byte(docs[i]), got); err != nil {
			t.Fatalf("decoding document %d: %v", i, err)
		}
		if !apiequality.Semantic.DeepEqual(w, got) {
			t.Errorf("document %d differs from the builder:\n%s", i, diff.Diff(w, got))
		}
	}
}

// TestPreparePolicyArtifactsMatchBuilder keeps
// artifacts/base/mutating-policy.yaml in step with PreparePolicy and its
// binding.
func TestPreparePolicyArtifactsMatchBuilder(t *testing.T) {
	data, err := os.ReadFile("../../../artifacts/prepare-policy/mutating-policy.yaml")
	if err != nil {
		t.Fatalf("reading artifacts: %v", err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("mutating-policy.yaml has %d documents, want 2", len(docs))
	}
	var policy admissionregistrationv1.MutatingAdmissionPolicy
	var binding admissionregistrationv1.MutatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &policy); err != nil {
		t.Fatalf("decoding the policy: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &binding); err != nil {
		t.Fatalf("decoding the binding: %v", err)
	}
	if want := PreparePolicy(); !apiequality.Semantic.DeepEqual(want, &policy) {
		t.Errorf("policy differs from the builder:\n%s", diff.Diff(want, &policy))
	}
	if want := PreparePolicyBinding(Config{}); !apiequality.Semantic.DeepEqual(want, &binding) {
		t.Errorf("binding differs from the builder:\n%s", diff.Diff(want, &binding))
	}
}
