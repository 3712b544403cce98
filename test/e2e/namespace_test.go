package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// namespaceDeletionLimit is how long `kubectl delete namespace` may take
// with Muster installed (issue 19's bar for make run).
const namespaceDeletionLimit = 30 * time.Second

// TestNamespaceDeletion: kube-controller-manager's namespace controller
// deletes every kind of Muster content, and namespaces with none, within
// 30s. It lists and deletes PodGroups and Workloads through the metadata
// client, which prefers protobuf; before muster-apiserver fell back to JSON
// for its own types, that answered 406 and every namespace stayed
// Terminating.
func TestNamespaceDeletion(t *testing.T) {
	tests := []struct {
		name  string
		setUp func(t *testing.T, ctx context.Context, ns string)
	}{
		{"no Muster objects", func(*testing.T, context.Context, string) {}},
		{"a PodGroup and a Workload", func(t *testing.T, ctx context.Context, ns string) {
			createGroup(t, ctx, ns, "idle", 3)
			w := &v1alpha1.Workload{
				ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: ns},
				Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
					Name: "workers", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2}},
				}}},
			}
			if _, err := muster.SchedulingV1alpha1().Workloads(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating Workload: %v", err)
			}
		}},
		{"a running gang", func(t *testing.T, ctx context.Context, ns string) {
			createGroup(t, ctx, ns, "running", 2)
			for i := range 2 {
				createPod(t, ctx, newPod(ns, fmt.Sprintf("r-%d", i), podOpts{group: "running"}))
			}
			waitScheduled(t, ctx, ns, "running", 2)
		}},
		{"a gang that never fits", func(t *testing.T, ctx context.Context, ns string) {
			createGroup(t, ctx, ns, "huge", 2)
			for i := range 2 {
				p := newPod(ns, fmt.Sprintf("h-%d", i), podOpts{group: "huge"})
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000")
				createPod(t, ctx, p)
			}
			waitFor(t, ctx, "the gang to be refused for capacity", func(ctx context.Context) (bool, error) {
				pg, err := getGroup(ctx, ns, "huge")
				if err != nil {
					return false, nil
				}
				c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason != "", nil
			})
		}},
		{"gated pods of a missing group", func(t *testing.T, ctx context.Context, ns string) {
			for i := range 2 {
				createPod(t, ctx, newPod(ns, fmt.Sprintf("o-%d", i), podOpts{group: "missing"}))
			}
		}},
		{"a group created from pod annotations", func(t *testing.T, ctx context.Context, ns string) {
			for i := range 2 {
				createPod(t, ctx, newPod(ns, fmt.Sprintf("a-%d", i), podOpts{group: "annotated", annotations: map[string]string{scheduling.MinCountAnnotation: "3"}}))
			}
			waitFor(t, ctx, "the group to be created", func(ctx context.Context) (bool, error) {
				_, err := getGroup(ctx, ns, "annotated")
				return err == nil, nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t, 2*time.Minute)
			ns := namespace(t, ctx)
			tt.setUp(t, ctx, ns)
			if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting namespace: %v", err)
			}
			took, err := waitNamespaceGone(ctx, kube, ns, namespaceDeletionLimit)
			if err != nil {
				got, _ := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				t.Fatalf("namespace %s still there %s after its deletion; status %s", ns, namespaceDeletionLimit, namespaceStatus(got))
			}
			t.Logf("namespace deleted in %s", took.Round(time.Millisecond))
		})
	}
}

// namespaceStatus is what a stuck namespace says about itself: its phase
// and the namespace controller's conditions, which name what it could not
// delete.
func namespaceStatus(ns *corev1.Namespace) string {
	if ns == nil {
		return "<never read>"
	}
	s := string(ns.Status.Phase)
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			s += fmt.Sprintf("; %s: %s", c.Type, c.Message)
		}
	}
	return s
}
