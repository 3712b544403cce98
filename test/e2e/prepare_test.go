package e2e

import (
	"bufio"
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// webhookCalls sums kube-apiserver's count of admission calls to the named
// webhook, from its /metrics.
func webhookCalls(t *testing.T, ctx context.Context, name string) float64 {
	t.Helper()
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET kube-apiserver /metrics: %v", err)
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_admission_webhook_admission_duration_seconds_count{") || !strings.Contains(line, `name="`+name+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// TestPreparePolicy (issue 10): where kube-apiserver serves
// MutatingAdmissionPolicy (1.36 and later), the policy muster-pod-prepare
// prepares a new labelled pod inside kube-apiserver and the mutating webhook
// is not called; before 1.36 the webhook does it. Either way the pod gets
// the gate (after another tool's), the finalizer and the managed label.
func TestPreparePolicy(t *testing.T) {
	ctx := testContext(t, time.Minute)
	ns := namespace(t, ctx)
	policy := servesMutatingPolicies(t, env)
	before := webhookCalls(t, ctx, pods.MutatingWebhookName)
	p := newPod(ns, "prepared", podOpts{group: "g"})
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
	got := createPod(t, ctx, p)
	after := webhookCalls(t, ctx, pods.MutatingWebhookName)

	gates := make([]string, len(got.Spec.SchedulingGates))
	for i, g := range got.Spec.SchedulingGates {
		gates[i] = g.Name
	}
	if !slices.Equal(gates, []string{"example.com/other", scheduling.AdmissionGate}) {
		t.Errorf("gates %v, want the other tool's then Muster's", gates)
	}
	if !slices.Equal(got.Finalizers, []string{scheduling.TrackingFinalizer}) {
		t.Errorf("finalizers %v, want Muster's", got.Finalizers)
	}
	if got.Labels[scheduling.ManagedLabel] != "true" {
		t.Errorf("labels %v, want %s=true", got.Labels, scheduling.ManagedLabel)
	}
	switch calls := after - before; {
	case policy && calls != 0:
		t.Errorf("the mutating webhook was called %v times for a pod the policy prepared, want 0", calls)
	case !policy && calls < 1:
		t.Errorf("the mutating webhook was called %v times on a cluster without MutatingAdmissionPolicy, want at least 1", calls)
	}
	t.Logf("MutatingAdmissionPolicy served: %v; webhook calls for the create: %v", policy, after-before)
	// Let the pod go: the other tool's gate keeps it unscheduled.
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "prepared", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
