package e2e

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// preemptionDRAPods is each gang's size: with gpusPerNode devices on each
// of 2 nodes, each pod claims a quarter of them, and a gang all of them.
const preemptionDRAPods = 4

// TestPreemptionDRA: 2 nodes of 8 devices. A low-priority Job gang whose 4
// pods claim 4 devices each, through a ResourceClaimTemplate, holds all 16
// and runs; a high-priority Job gang of the same shape arrives. CPU is
// plentiful: only the devices are short, so the high gang preempts only
// because the low gang's devices count as freed once it is gone. Every low
// pod gets DisruptionTarget, reason PreemptionByMuster, and is deleted; the
// high gang then runs whole. No device is ever allocated to two claims, no
// high pod is released while a claim of an evicted pod still holds a
// device (Muster releases it only onto devices that are free), and no pod
// of either gang runs while its gang is short.
func TestPreemptionDRA(t *testing.T) {
	if _, err := kube.Discovery().ServerResourcesForGroupVersion(resourcev1.SchemeGroupVersion.String()); err != nil {
		t.Skipf("%s is not served (DRA is GA from 1.34): %v", resourcev1.SchemeGroupVersion, err)
	}
	ctx := testContext(t, draTestTimeout)
	ns := namespace(t, ctx)
	nodes := placementNodes(t, ctx, ns, "gpu", 2, "32", nil)
	createDeviceClass(t, ctx, ns)
	for _, n := range nodes {
		publishGPUs(t, ctx, ns, n)
	}
	tmpl := createGPUTemplate(t, ctx, ns, "quarter", gpusPerNode*len(nodes)/preemptionDRAPods)
	low := priorityClass(t, ctx, ns+"-low", 100)
	high := priorityClass(t, ctx, ns+"-high", 1000)
	w := watchPreemption(t, ctx, ns)

	gpuJob := func(name, class string) *batchv1.Job {
		job := preemptibleJob(ns, name, class, jobOpts{pods: preemptionDRAPods, cpu: "1", runFor: "10m"})
		claimGPUs(tmpl)(&job.Spec.Template.Spec)
		return job
	}
	createPreemptibleJob(t, ctx, gpuJob("low", low))
	evicted := w.expectRunning(t, ctx, "low", preemptionDRAPods, nil)
	evictedUIDs := uids(evicted)
	createPreemptibleJob(t, ctx, gpuJob("high", high))

	decided := w.waitPreemption(t, ctx, "high")
	expectVictims(t, ctx, ns, decided.preemption, 1000, map[string]v1alpha1.PreemptionVictim{"low": {Priority: 100, Pods: preemptionDRAPods}})
	expectMarkedVictim(t, w.waitPreempted(t, ctx, "low"), decided, "high")

	w.poll(t, ctx, "the high gang to run whole on the low gang's devices", func() bool {
		released, running := "", 0
		for _, p := range groupPods(t, ctx, ns, "high") {
			if scheduling.HasGate(&p) {
				continue
			}
			released = p.Name
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		// Listed after the pods: a claim deallocated before a pod was
		// released shows so here.
		if held := heldByPods(t, ctx, ns, evictedUIDs); released != "" && len(held) > 0 {
			t.Fatalf("pod %s of the high gang is released while claims %v of evicted pods still hold devices: %s", released, held, w.describe())
		}
		expectDevicesOnce(t, ctx, ns)
		return running == preemptionDRAPods
	})
	w.expectEvicted(t, ctx, "low", evicted)
	expectAdmittedWithoutPreemption(t, w, "high")
	expectEvent(t, ctx, ns, "high", scheduling.EventPreempting)
	expectEvent(t, ctx, ns, "low", scheduling.EventPreempted)
	w.check(t)
}

// heldByPods are the namespace's claims, generated for the pods of uids,
// that are still allocated.
func heldByPods(t *testing.T, ctx context.Context, ns string, uids map[types.UID]bool) []string {
	t.Helper()
	claims, err := kube.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing ResourceClaims: %v", err)
	}
	var out []string
	for _, c := range claims.Items {
		if owner := metav1.GetControllerOfNoCopy(&c); owner != nil && owner.Kind == "Pod" && uids[owner.UID] && c.Status.Allocation != nil {
			out = append(out, c.Name)
		}
	}
	return out
}
