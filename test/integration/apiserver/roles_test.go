package apiserver

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/integration/framework"
)

func sparkGroup(name string) *v1alpha1.PodGroup {
	pg := gangGroup(name, 9)
	pg.Spec.Roles = []v1alpha1.PodGroupRole{
		{Name: "driver", Count: 1},
		{Name: "worker", Count: 8, CreatedLater: true, Template: &v1alpha1.PodGroupRoleTemplate{
			Requests:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			NodeSelector: map[string]string{"pool": "workers"},
		}},
	}
	return pg
}

// TestRolesStorage checks that spec.roles and status.roles are stored as
// sent, that through the API the roles keep to their rules (agreement with
// minCount, only counts change), and that -o wide prints them.
func TestRolesStorage(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	pgs := s.Client.SchedulingV1alpha1().PodGroups(ns)

	created, err := pgs.Create(ctx, sparkGroup("spark"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	w := created.Spec.Roles[1]
	if len(created.Spec.Roles) != 2 || !w.CreatedLater || w.Template == nil || w.Template.Requests.Cpu().String() != "2" || w.Template.NodeSelector["pool"] != "workers" {
		t.Fatalf("stored roles = %+v, want driver and a createdLater worker with its template", created.Spec.Roles)
	}

	bad := sparkGroup("disagrees")
	bad.Spec.SchedulingPolicy.Gang.MinCount = 4
	_, err = pgs.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalid(t, err, "spec.schedulingPolicy.gang.minCount")

	rejected := []struct {
		name, patch, field string
	}{
		{"a count that disagrees with minCount", `{"spec":{"roles":[{"name":"driver","count":1},{"name":"worker","count":4}]}}`, "spec.schedulingPolicy.gang.minCount"},
		{"a renamed role", `{"spec":{"roles":[{"name":"driver","count":1},{"name":"executor","count":8,"createdLater":true,"template":{"requests":{"cpu":"2"}}}]}}`, "spec.roles[1]"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pgs.Patch(ctx, "spark", types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{})
			expectInvalid(t, err, tc.field)
		})
	}

	// Scaling the workers with minCount is allowed; the roles list is a
	// map keyed by name, so a strategic-merge-style update names both.
	pg, err := pgs.Get(ctx, "spark", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg.Spec.Roles[1].Count = 4
	pg.Spec.SchedulingPolicy.Gang.MinCount = 5
	if pg, err = pgs.Update(ctx, pg, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scaling the workers: %v", err)
	}

	pg.Status.Roles = []v1alpha1.PodGroupRoleStatus{{Name: "driver", Active: 1}, {Name: "worker", Active: 3, Succeeded: 1}}
	pg.Status.Pods, pg.Status.Active, pg.Status.Succeeded = 4, 4, 1
	pg, err = pgs.UpdateStatus(ctx, pg, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status update: %v", err)
	}
	if len(pg.Status.Roles) != 2 || pg.Status.Roles[1].Succeeded != 1 {
		t.Errorf("status.roles = %+v, want the written counts", pg.Status.Roles)
	}
	pg.Status.Roles[1].Succeeded = 0
	_, err = pgs.UpdateStatus(ctx, pg, metav1.UpdateOptions{})
	expectInvalid(t, err, "status.roles[1].succeeded")

	raw, err := s.RawClient()
	if err != nil {
		t.Fatal(err)
	}
	table := getTable(ctx, t, raw, "podgroups")
	roles := slices.IndexFunc(table.ColumnDefinitions, func(c metav1.TableColumnDefinition) bool { return c.Name == "Roles" })
	if roles < 0 {
		t.Fatalf("no Roles column in %+v", table.ColumnDefinitions)
	}
	if got := table.Rows[0].Cells[roles]; got != "driver:1/1,worker:3/4" {
		t.Errorf("Roles column = %v, want driver:1/1,worker:3/4", got)
	}
}
