package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// admissionRegistrationV1 is what discovery lists for
// admissionregistration.k8s.io/v1 with the given resources.
func admissionRegistrationV1(resources ...string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: "admissionregistration.k8s.io/v1"}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r})
	}
	return list
}

var (
	webhooks = []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}
	vap      = []string{"validatingadmissionpolicies", "validatingadmissionpolicies/status", "validatingadmissionpolicybindings"}
	mapv1    = []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}
	// kube130 is what kube-apiserver 1.30 serves in the group; 1.37 adds
	// MutatingAdmissionPolicy.
	kube130 = admissionRegistrationV1(slices.Concat(webhooks, vap)...)
	kube137 = admissionRegistrationV1(slices.Concat(webhooks, vap, mapv1)...)
)

// TestGateAdmissionPlugins checks that each plugin is kept exactly when the
// cluster serves every resource it watches, and that flags cannot force a
// plugin the cluster cannot serve.
func TestGateAdmissionPlugins(t *testing.T) {
	tests := []struct {
		name        string
		served      []*metav1.APIResourceList
		enable      []string
		disable     []string
		wantChain   []string
		wantDisable []string
	}{
		{
			name:      "a cluster serving every API keeps the whole chain",
			served:    []*metav1.APIResourceList{kube137},
			wantChain: []string{"NamespaceLifecycle", "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "PodGroupWorkloadExists", "ResourceQuota"},
		},
		{
			name:        "a 1.30 cluster without MutatingAdmissionPolicy turns only that plugin off",
			served:      []*metav1.APIResourceList{kube130},
			wantChain:   []string{"NamespaceLifecycle", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "PodGroupWorkloadExists", "ResourceQuota"},
			wantDisable: []string{"MutatingAdmissionPolicy"},
		},
		{
			name:        "a policy without its bindings resource is turned off",
			served:      []*metav1.APIResourceList{admissionRegistrationV1(slices.Concat(webhooks, vap, []string{"mutatingadmissionpolicies"})...)},
			wantChain:   []string{"NamespaceLifecycle", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "PodGroupWorkloadExists", "ResourceQuota"},
			wantDisable: []string{"MutatingAdmissionPolicy"},
		},
		{
			name:        "a cluster without admissionregistration.k8s.io/v1 keeps only the plugins that need no such API",
			served:      nil,
			wantChain:   []string{"NamespaceLifecycle", "PodGroupWorkloadExists", "ResourceQuota"},
			wantDisable: []string{"MutatingAdmissionPolicy", "ValidatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"},
		},
		{
			name:        "--enable-admission-plugins cannot force a plugin whose API is missing",
			served:      []*metav1.APIResourceList{kube130},
			enable:      []string{"MutatingAdmissionPolicy"},
			wantChain:   []string{"NamespaceLifecycle", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "PodGroupWorkloadExists", "ResourceQuota"},
			wantDisable: []string{"MutatingAdmissionPolicy"},
		},
		{
			name:        "a plugin the user disabled stays off and is not reported again",
			served:      []*metav1.APIResourceList{kube130},
			disable:     []string{"MutatingAdmissionPolicy", "ValidatingAdmissionWebhook"},
			wantChain:   []string{"NamespaceLifecycle", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "PodGroupWorkloadExists", "ResourceQuota"},
			wantDisable: []string{"MutatingAdmissionPolicy", "ValidatingAdmissionWebhook"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewOptions().RecommendedOptions.Admission
			a.EnablePlugins = tc.enable
			a.DisablePlugins = tc.disable
			client := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.served}}
			if err := gateAdmissionPluginsWith(t.Context(), a, client); err != nil {
				t.Fatalf("gating plugins: %v", err)
			}
			if got := enabledAdmissionPlugins(a); !slices.Equal(got, tc.wantChain) {
				t.Errorf("chain = %v, want %v", got, tc.wantChain)
			}
			if !slices.Equal(a.DisablePlugins, tc.wantDisable) {
				t.Errorf("DisablePlugins = %v, want %v", a.DisablePlugins, tc.wantDisable)
			}
			if errs := a.Validate(); len(errs) > 0 {
				t.Errorf("gated options do not validate: %v", errs)
			}
		})
	}
}

// TestGateAdmissionPluginsFailsWithoutDiscovery checks that start fails,
// rather than guessing, when discovery keeps failing for another reason than
// a missing API.
func TestGateAdmissionPluginsFailsWithoutDiscovery(t *testing.T) {
	fake := &clienttesting.Fake{}
	fake.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	a := NewOptions().RecommendedOptions.Admission
	err := gateAdmissionPluginsWith(ctx, a, &discoveryfake.FakeDiscovery{Fake: fake})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("gating plugins = %v, want an error carrying the discovery failure", err)
	}
}
