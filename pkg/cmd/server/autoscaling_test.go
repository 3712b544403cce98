package server

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/podgroup"
)

// TestRequesterKind: auto prefers ProvisioningRequests where they are
// served, then capacity-request pods where Karpenter is, else asks for
// nothing; provisioningrequest where they are not served cannot run.
func TestRequesterKind(t *testing.T) {
	served := []*metav1.APIResourceList{{
		GroupVersion: autoscaling.ProvisioningRequestResource.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: autoscaling.ProvisioningRequestResource.Resource, Namespaced: true, Kind: autoscaling.ProvisioningRequestKind}},
	}}
	karpenter := []*metav1.APIResourceList{{
		GroupVersion: autoscaling.KarpenterNodePools.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: autoscaling.KarpenterNodePools.Resource, Kind: "NodePool"}},
	}}
	tests := []struct {
		name       string
		mode       string
		resources  []*metav1.APIResourceList
		wantKind   string
		wantServed bool
	}{
		{"auto where served makes ProvisioningRequests", podgroup.AutoscalingAuto, served, autoscaling.KindProvisioningRequest, true},
		{"auto where Karpenter is served makes pods", podgroup.AutoscalingAuto, karpenter, autoscaling.KindPods, true},
		{"auto where both are served makes ProvisioningRequests", podgroup.AutoscalingAuto, append(served, karpenter...), autoscaling.KindProvisioningRequest, true},
		{"auto with no autoscaler found makes nothing", podgroup.AutoscalingAuto, nil, "", true},
		{"pods makes pods with no autoscaler found", podgroup.AutoscalingPods, nil, autoscaling.KindPods, true},
		{"pods makes pods where ProvisioningRequests are served", podgroup.AutoscalingPods, served, autoscaling.KindPods, true},
		{"provisioningrequest where served makes them", podgroup.AutoscalingProvisioningRequest, served, autoscaling.KindProvisioningRequest, true},
		{"provisioningrequest where not served cannot", podgroup.AutoscalingProvisioningRequest, nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.resources}}
			kind, ok, err := requesterKind(tc.mode, disc)
			if err != nil {
				t.Fatal(err)
			}
			if kind != tc.wantKind || ok != tc.wantServed {
				t.Errorf("got %q, served %v; want %q, %v", kind, ok, tc.wantKind, tc.wantServed)
			}
		})
	}
}
