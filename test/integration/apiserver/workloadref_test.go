package apiserver

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/integration/framework"
)

// TestWorkloadRefAdmission checks the PodGroupWorkloadExists plugin: policy,
// priority and schedulingConstraints come from the template when left
// empty, an explicit policy wins, and a missing Workload or template is
// rejected with its field.
func TestWorkloadRefAdmission(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	client := s.Client.SchedulingV1alpha1()
	if _, err := client.Workloads(ns).Create(ctx, workload("job",
		gangTemplate("workers", 8, ptr.To[int32](100)),
		v1alpha1.PodGroupTemplate{Name: "driver", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}},
		v1alpha1.PodGroupTemplate{Name: "zoned", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 4}},
			SchedulingConstraints: &v1alpha1.PodGroupSchedulingConstraints{
				Topology: []v1alpha1.TopologyConstraint{{Key: "topology.kubernetes.io/zone"}},
				Slice:    &v1alpha1.TopologySlice{Key: "example.com/rack", Size: 2},
			}},
	), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create workload: %v", err)
	}
	ref := func(name, wl, tpl string) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: wl, TemplateName: tpl}},
		}
	}

	tests := []struct {
		name         string
		pg           *v1alpha1.PodGroup
		wantMin      int32 // 0 means a basic policy
		wantPriority *int32
		wantField    string // a 422 naming this field
	}{
		{name: "gang policy and priority copied from the template", pg: ref("workers-0", "job", "workers"), wantMin: 8, wantPriority: ptr.To[int32](100)},
		{name: "basic policy copied from the template", pg: ref("driver-0", "job", "driver")},
		{name: "an explicit policy is kept", pg: func() *v1alpha1.PodGroup {
			pg := ref("workers-1", "job", "workers")
			pg.Spec.SchedulingPolicy.Gang = &v1alpha1.GangSchedulingPolicy{MinCount: 2}
			pg.Spec.Priority = ptr.To[int32](5)
			return pg
		}(), wantMin: 2, wantPriority: ptr.To[int32](5)},
		{name: "a missing Workload is rejected", pg: ref("orphan", "nope", "workers"), wantField: "spec.workloadRef.workloadName"},
		{name: "a missing template is rejected", pg: ref("orphan", "job", "nope"), wantField: "spec.workloadRef.templateName"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := client.PodGroups(ns).Create(ctx, tc.pg, metav1.CreateOptions{})
			if tc.wantField != "" {
				expectInvalid(t, err, tc.wantField)
				return
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			p := got.Spec.SchedulingPolicy
			switch {
			case tc.wantMin == 0 && (p.Basic == nil || p.Gang != nil):
				t.Errorf("policy = %+v, want basic", p)
			case tc.wantMin > 0 && (p.Gang == nil || p.Gang.MinCount != tc.wantMin):
				t.Errorf("policy = %+v, want gang of %d", p, tc.wantMin)
			}
			if !ptr.Equal(got.Spec.Priority, tc.wantPriority) {
				t.Errorf("priority = %v, want %v", ptr.Deref(got.Spec.Priority, -1), ptr.Deref(tc.wantPriority, -1))
			}
		})
	}

	// workloadRef is immutable.
	pg, err := client.PodGroups(ns).Get(ctx, "workers-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	pg.Spec.WorkloadRef.TemplateName = "driver"
	_, err = client.PodGroups(ns).Update(ctx, pg, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.workloadRef")

	// The template's schedulingConstraints are copied, and are immutable
	// like the group's own.
	zoned, err := client.PodGroups(ns).Create(ctx, ref("zoned-0", "job", "zoned"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if c := zoned.Spec.SchedulingConstraints; c == nil || len(c.Topology) != 1 || c.Topology[0].Key != "topology.kubernetes.io/zone" ||
		c.Slice == nil || c.Slice.Key != "example.com/rack" || c.Slice.Size != 2 {
		t.Fatalf("schedulingConstraints = %+v, want the template's", c)
	}
	zoned.Spec.SchedulingConstraints.Slice.Size = 4
	_, err = client.PodGroups(ns).Update(ctx, zoned, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.schedulingConstraints")
}
