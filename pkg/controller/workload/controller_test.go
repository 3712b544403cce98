package workload

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
	informers "github.com/muster-dev/muster/pkg/generated/informers/externalversions"
)

func newWorkload(generation int64, status v1alpha1.WorkloadStatus) *v1alpha1.Workload {
	return &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", Generation: generation},
		Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{
			{Name: "workers", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2}}},
		}},
		Status: status,
	}
}

func TestSync(t *testing.T) {
	accepted := v1alpha1.WorkloadStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{{
		Type: ConditionAccepted, Status: metav1.ConditionTrue, Reason: "Observed", Message: "1 pod-group templates", ObservedGeneration: 2,
	}}}
	tests := []struct {
		name       string
		workload   *v1alpha1.Workload
		key        string
		wantWrites int
	}{
		{"a new generation is recorded with the Accepted condition", newWorkload(2, v1alpha1.WorkloadStatus{}), "ns/job", 1},
		{"a status that already shows the generation is not written again", newWorkload(2, accepted), "ns/job", 0},
		{"a spec change moves observedGeneration", newWorkload(3, accepted), "ns/job", 1},
		{"a Workload that is gone is nothing to do", newWorkload(2, v1alpha1.WorkloadStatus{}), "ns/other", 0},
		{"a malformed key is dropped", newWorkload(2, v1alpha1.WorkloadStatus{}), "a/b/c", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset(tc.workload)
			factory := informers.NewSharedInformerFactory(client, 0)
			wl := factory.Scheduling().V1alpha1().Workloads()
			if err := wl.Informer().GetIndexer().Add(tc.workload); err != nil {
				t.Fatal(err)
			}
			c, err := New(client, wl)
			if err != nil {
				t.Fatal(err)
			}
			defer c.queue.ShutDown()
			if err := c.sync(t.Context(), tc.key); err != nil {
				t.Fatalf("sync: %v", err)
			}
			writes := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" && a.GetSubresource() == "status" {
					writes++
				}
			}
			if writes != tc.wantWrites {
				t.Fatalf("status writes = %d, want %d", writes, tc.wantWrites)
			}
			if writes == 0 {
				return
			}
			got, err := client.SchedulingV1alpha1().Workloads("ns").Get(t.Context(), "job", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.ObservedGeneration != tc.workload.Generation || !meta.IsStatusConditionTrue(got.Status.Conditions, ConditionAccepted) {
				t.Errorf("status = %+v, want observedGeneration %d and Accepted=True", got.Status, tc.workload.Generation)
			}
		})
	}
}

// TestSyncRecoversPanic: a Workload sync that panics returns an error, so
// that its key is retried with backoff, and the controller goes on.
func TestSyncRecoversPanic(t *testing.T) {
	err := recovering(context.Background(), "ns/w", func(context.Context, string) error {
		var m map[string]int
		m["boom"]++
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "sync of Workload ns/w panicked") {
		t.Errorf("recovering = %v, want an error that says the sync of ns/w panicked", err)
	}
	if err := recovering(context.Background(), "ns/w", func(context.Context, string) error { return nil }); err != nil {
		t.Errorf("recovering of a sync that succeeds = %v, want nil", err)
	}
}
