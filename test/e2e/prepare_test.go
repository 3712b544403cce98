package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
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
// MutatingAdmissionPolicy (1.36 and later), the opt-in policy
// muster-pod-prepare (the chart's preparePolicy.enabled) prepares a new labelled pod
// inside kube-apiserver and the mutating webhook is not called; without it,
// or before 1.36, the webhook does it. Either way the pod gets the gate
// (after another tool's), the finalizer and the managed label.
func TestPreparePolicy(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	withPolicy := []bool{false}
	if servesMutatingPolicies(t, env) {
		withPolicy = append(withPolicy, true)
	}
	for _, policy := range withPolicy {
		t.Run(fmt.Sprintf("policy=%v", policy), func(t *testing.T) {
			if policy {
				installPreparePolicy(t, ctx, ns)
			}
			name := fmt.Sprintf("prepared-%v", policy)
			before := webhookCalls(t, ctx, manifests.MutatingWebhookName)
			p := newPod(ns, name, podOpts{group: "g"})
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/other"}}
			got := createPod(t, ctx, p)
			calls := webhookCalls(t, ctx, manifests.MutatingWebhookName) - before
			expectPrepared(t, got)
			switch {
			case policy && calls != 0:
				t.Errorf("the mutating webhook was called %v times for a pod the policy prepared, want 0", calls)
			case !policy && calls < 1:
				t.Errorf("the mutating webhook was called %v times without the policy, want at least 1", calls)
			}
			// The other tool's gate keeps the pod unscheduled; let it go, and
			// wait until Muster's finalizer is off, so that no later test
			// counts that patch among its own.
			if err := kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "the pod to be gone", func(ctx context.Context) (bool, error) {
				_, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				return isNotFound(err), nil
			})
		})
	}
}

func expectPrepared(t *testing.T, got *corev1.Pod) {
	t.Helper()
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
}

// installPreparePolicy creates muster-pod-prepare and its binding, removes
// them when the test ends, and waits until kube-apiserver applies it: a
// server-side dry run of a labelled pod comes back prepared without a
// webhook call.
func installPreparePolicy(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	api := kube.AdmissionregistrationV1()
	if _, err := api.MutatingAdmissionPolicies().Create(ctx, manifests.PreparePolicy(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the policy: %v", err)
	}
	t.Cleanup(func() {
		_ = api.MutatingAdmissionPolicies().Delete(context.Background(), manifests.PreparePolicyName, metav1.DeleteOptions{})
	})
	if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, manifests.PreparePolicyBinding(manifests.Config{}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the binding: %v", err)
	}
	t.Cleanup(func() {
		_ = api.MutatingAdmissionPolicyBindings().Delete(context.Background(), manifests.PreparePolicyName, metav1.DeleteOptions{})
	})
	waitFor(t, ctx, "the policy to prepare pods", func(ctx context.Context) (bool, error) {
		before := webhookCalls(t, ctx, manifests.MutatingWebhookName)
		_, err := kube.CoreV1().Pods(ns).Create(ctx, newPod(ns, "probe", podOpts{group: "g"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && webhookCalls(t, ctx, manifests.MutatingWebhookName) == before, nil
	})
}
