package apiserver

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const ns = "default"

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func gangGroup(name string, minCount int32, gates ...string) *v1alpha1.PodGroup {
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PodGroupSpec{
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}},
		},
	}
	for _, g := range gates {
		pg.Spec.SchedulingGates = append(pg.Spec.SchedulingGates, v1alpha1.PodGroupSchedulingGate{Name: g})
	}
	return pg
}

func workload(name string, templates ...v1alpha1.PodGroupTemplate) *v1alpha1.Workload {
	return &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.WorkloadSpec{PodGroupTemplates: templates},
	}
}

func gangTemplate(name string, minCount int32, priority *int32) v1alpha1.PodGroupTemplate {
	return v1alpha1.PodGroupTemplate{
		Name:             name,
		SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}},
		Priority:         priority,
	}
}
