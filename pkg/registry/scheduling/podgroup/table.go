package podgroup

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/registry/printers"
)

// tableConvertor prints PodGroups for `kubectl get`. Columns of priority 1
// appear only with -o wide.
type tableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the PodGroup."},
	{Name: "Policy", Type: "string", Description: "Scheduling policy: Basic or Gang."},
	{Name: "Min", Type: "integer", Description: "Pods needed before the group is admitted."},
	{Name: "Pods", Type: "integer", Description: "Existing pods of the group."},
	{Name: "Scheduled", Type: "integer", Description: "Pods bound to a node."},
	{Name: "Succeeded", Type: "integer", Description: "Pods that succeeded, counted once each."},
	{Name: "Failed", Type: "integer", Description: "Pods that failed, counted once each."},
	{Name: "Phase", Type: "string", Description: "Summary of the group's lifecycle."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
	{Name: "Workload", Type: "string", Priority: 1, Description: "Workload and template the group was created from."},
	{Name: "Gates", Type: "string", Priority: 1, Description: "Group-level scheduling gates still present."},
	{Name: "Priority", Type: "string", Priority: 1, Description: "Admission priority."},
	{Name: "Roles", Type: "string", Priority: 1, Description: "Each role's active pods over its count, such as driver:1/1,worker:10/10."},
	{Name: "Domain", Type: "string", Priority: 1, Description: "The topology domain the group was admitted in, as key=value."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	return printers.ToTable(obj, columns, func(o runtime.Object, name, age string) []interface{} {
		pg := o.(*scheduling.PodGroup)
		s := &pg.Status
		return []interface{}{
			name, policyName(&pg.Spec.SchedulingPolicy), int64(pg.Spec.MinCount()),
			int64(s.Pods), int64(s.Scheduled), int64(s.Succeeded), int64(s.Failed), string(s.Phase), age,
			workloadColumn(pg.Spec.WorkloadRef), gatesColumn(pg.Spec.SchedulingGates), priorityColumn(pg.Spec.Priority),
			rolesColumn(pg.Spec.Roles, s.Roles), domainColumn(s.TopologyDomain),
		}
	})
}

func policyName(p *scheduling.PodGroupSchedulingPolicy) string {
	switch {
	case p.Gang != nil:
		return "Gang"
	case p.Basic != nil:
		return "Basic"
	}
	return "<none>"
}

func workloadColumn(ref *scheduling.WorkloadReference) string {
	if ref == nil {
		return "<none>"
	}
	return ref.WorkloadName + "/" + ref.TemplateName
}

func gatesColumn(gates []scheduling.PodGroupSchedulingGate) string {
	if len(gates) == 0 {
		return "<none>"
	}
	names := make([]string, len(gates))
	for i, g := range gates {
		names[i] = g.Name
	}
	return strings.Join(names, ",")
}

func priorityColumn(p *int32) string {
	if p == nil {
		return "<none>"
	}
	return strconv.Itoa(int(*p))
}

func domainColumn(d *scheduling.TopologyDomain) string {
	if d == nil {
		return "<none>"
	}
	return d.Key + "=" + d.Value
}

// rolesColumn shows each role as name:active/count, in the order of
// spec.roles, so that an incomplete role stands out.
func rolesColumn(roles []scheduling.PodGroupRole, statuses []scheduling.PodGroupRoleStatus) string {
	if len(roles) == 0 {
		return "<none>"
	}
	active := make(map[string]int32, len(statuses))
	for _, s := range statuses {
		active[s.Name] = s.Active
	}
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = fmt.Sprintf("%s:%d/%d", r.Name, active[r.Name], r.Count)
	}
	return strings.Join(parts, ",")
}
