package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
)

// TestValidatingWebhookOnlyForRoles (issue 10): the policy muster-pod-labels
// checks a labelled pod's create inside kube-apiserver, so a pod without
// roles costs kube-apiserver no validating webhook call, and one with roles,
// whose annotations CEL cannot parse, still gets one. Either way a bad value
// is refused naming its field.
func TestValidatingWebhookOnlyForRoles(t *testing.T) {
	ctx := testContext(t, time.Minute)
	ns := namespace(t, ctx)
	tests := []struct {
		name      string
		opts      podOpts
		wantCalls bool
		wantField string // empty: the create succeeds
	}{
		{name: "plain", opts: podOpts{group: "g"}},
		{name: "min-count", opts: podOpts{group: "g", annotations: map[string]string{scheduling.MinCountAnnotation: "2"}}},
		{name: "bad-min-count", opts: podOpts{group: "g", annotations: map[string]string{scheduling.MinCountAnnotation: "two"}},
			wantField: "metadata.annotations[scheduling.muster.dev/min-count]"},
		{name: "empty-group", opts: podOpts{labels: map[string]string{scheduling.PodGroupLabel: ""}},
			wantField: "metadata.labels[scheduling.muster.dev/pod-group]: Required value"},
		{name: "topology", opts: podOpts{group: "g", annotations: map[string]string{
			scheduling.TopologyRequiredAnnotation: "example.com/block", scheduling.TopologyPreferredAnnotation: "example.com/rack",
			scheduling.TopologySliceKeyAnnotation: "example.com/rack", scheduling.TopologySliceSizeAnnotation: "8"}}},
		{name: "bad-topology-key", opts: podOpts{group: "g", annotations: map[string]string{scheduling.TopologyRequiredAnnotation: "Rack/a/b"}},
			wantField: "metadata.annotations[scheduling.muster.dev/topology-required]"},
		{name: "topology-slice-without-size", opts: podOpts{group: "g", annotations: map[string]string{scheduling.TopologySliceKeyAnnotation: "example.com/rack"}},
			wantField: "metadata.annotations[scheduling.muster.dev/topology-slice-size]"},
		{name: "topology-slice-size-zero", opts: podOpts{group: "g", annotations: map[string]string{
			scheduling.TopologySliceKeyAnnotation: "example.com/rack", scheduling.TopologySliceSizeAnnotation: "0"}},
			wantField: "metadata.annotations[scheduling.muster.dev/topology-slice-size]"},
		{name: "role", opts: podOpts{group: "r", labels: map[string]string{scheduling.RoleLabel: "driver"}}, wantCalls: true},
		{name: "bad-role", opts: podOpts{group: "r", labels: map[string]string{scheduling.RoleLabel: "Driver_1"}}, wantCalls: true,
			wantField: "metadata.labels[scheduling.muster.dev/role]"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := webhookCalls(t, ctx, manifests.ValidatingWebhookName)
			p := newPod(ns, fmt.Sprintf("p%d", i), tc.opts)
			// A dry run is admitted in full but stored nowhere, so nothing of
			// this test reaches the controller.
			_, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			calls := webhookCalls(t, ctx, manifests.ValidatingWebhookName) - before
			switch {
			case tc.wantField == "" && err != nil:
				t.Fatalf("create: %v", err)
			case tc.wantField != "" && (err == nil || !strings.Contains(err.Error(), tc.wantField)):
				t.Fatalf("create: %v, want a rejection naming %s", err, tc.wantField)
			}
			if tc.wantCalls && calls < 1 {
				t.Errorf("validating webhook called %v times for a pod with roles, want at least 1", calls)
			}
			if !tc.wantCalls && calls != 0 {
				t.Errorf("validating webhook called %v times for a pod without roles, want 0: the policy checks it", calls)
			}
		})
	}
}
