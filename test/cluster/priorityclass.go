package cluster

import (
	"context"
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewPriorityClass creates a PriorityClass of value, deleted when the test
// ends, and returns its name.
func (c *Cluster) NewPriorityClass(t testing.TB, ctx context.Context, name string, value int32) string {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PriorityClass %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting PriorityClass %s: %v", name, err)
		}
	})
	return name
}
