package apiserver

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/integration/framework"
)

func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
}

// TestStatusSubresource checks that /status writes only status, that main
// writes never touch status, and that the phase follows the conditions.
func TestStatusSubresource(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	pgs := s.Client.SchedulingV1alpha1().PodGroups(ns)

	pg, err := pgs.Create(ctx, gangGroup("gang", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	// A status write that also changes spec and labels keeps the old ones.
	pg.Status.Pods, pg.Status.Active, pg.Status.Gated = 2, 2, 2
	pg.Status.Conditions = []metav1.Condition{condition(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, "GangComplete")}
	pg.Status.Phase = v1alpha1.PodGroupFailed // derived by the server: ignored
	pg.Spec.SchedulingPolicy.Gang.MinCount = 99
	pg.Labels = map[string]string{"sneaky": "true"}
	got, err := pgs.UpdateStatus(ctx, pg, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if got.Status.Pods != 2 || got.Status.Active != 2 {
		t.Errorf("status counters = pods %d active %d, want 2 and 2", got.Status.Pods, got.Status.Active)
	}
	if got.Spec.SchedulingPolicy.Gang.MinCount != 2 || got.Labels["sneaky"] != "" {
		t.Errorf("status write changed spec or labels: minCount=%d labels=%v", got.Spec.SchedulingPolicy.Gang.MinCount, got.Labels)
	}
	if got.Status.Phase != v1alpha1.PodGroupAdmitted {
		t.Errorf("phase = %q, want Admitted (derived from the Admitted condition)", got.Status.Phase)
	}
	if got.Generation != 1 {
		t.Errorf("generation after a status write = %d, want 1", got.Generation)
	}

	// A main write that changes status keeps the stored status.
	got.Status.Pods = 7
	got.Spec.SchedulingPolicy.Gang.MinCount = 3
	main, err := pgs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if main.Status.Pods != 2 || main.Spec.SchedulingPolicy.Gang.MinCount != 3 || main.Generation != 2 {
		t.Errorf("after main update pods=%d minCount=%d generation=%d, want 2, 3, 2", main.Status.Pods, main.Spec.SchedulingPolicy.Gang.MinCount, main.Generation)
	}

	// Status rules hold through the API: counts never go down.
	main.Status.Succeeded = 2
	main.Status.Conditions = append(main.Status.Conditions,
		condition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "MinCountBound"),
		condition(v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded))
	main.Status.Active = 0
	done, err := pgs.UpdateStatus(ctx, main, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("finishing: %v", err)
	}
	if done.Status.Phase != v1alpha1.PodGroupSucceeded {
		t.Errorf("phase = %q, want Succeeded", done.Status.Phase)
	}
	done.Status.Succeeded = 1
	_, err = pgs.UpdateStatus(ctx, done, metav1.UpdateOptions{})
	expectInvalid(t, err, "status.succeeded")

	// A merge patch to /status with a bad counter is rejected with its field.
	_, err = pgs.Patch(ctx, "gang", types.MergePatchType, []byte(`{"status":{"ready":-1}}`), metav1.PatchOptions{}, "status")
	expectInvalid(t, err, "status.ready")
}

// TestWorkloadStatus checks the Workload status subresource.
func TestWorkloadStatus(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	wls := s.Client.SchedulingV1alpha1().Workloads(ns)
	w, err := wls.Create(ctx, workload("job", gangTemplate("workers", 2, nil)), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	w.Status.ObservedGeneration = 1
	w.Status.Conditions = []metav1.Condition{condition("Ready", metav1.ConditionTrue, "Observed")}
	w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 5
	got, err := wls.UpdateStatus(ctx, w, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if got.Status.ObservedGeneration != 1 || len(got.Status.Conditions) != 1 {
		t.Errorf("status not written: %+v", got.Status)
	}
	if got.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount != 2 {
		t.Errorf("status write changed spec minCount to %d", got.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount)
	}
	got.Status.ObservedGeneration = -1
	_, err = wls.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	expectInvalid(t, err, "status.observedGeneration")
}
