package pendingpodgroup

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/registry/printers"
)

// tableConvertor prints the queue for `kubectl get pendingpodgroups`.
type tableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the waiting PodGroup."},
	{Name: "Position", Type: "string", Description: "Place in admission order among all the gangs that wait, from 1."},
	{Name: "Priority", Type: "integer", Description: "The gang's priority, as admission orders it."},
	{Name: "Pods", Type: "integer", Description: "Pods that wait at the gate."},
	{Name: "Min", Type: "integer", Description: "Pods that must be placed at once; 0 for an admitted group's joiners."},
	{Name: "Reason", Type: "string", Description: "Why it waits."},
	{Name: "Age", Type: "string", Description: "Time since the group was created."},
	{Name: "Needs", Type: "string", Priority: 1, Description: "What its waiting pods request, summed."},
	{Name: "Message", Type: "string", Priority: 1, Description: "Why it waits, in full."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	return printers.ToTable(obj, columns, func(o runtime.Object, name, age string) []interface{} {
		p := o.(*scheduling.PendingPodGroup)
		return []interface{}{
			name, fmt.Sprintf("%d/%d", p.Queue.Position, p.Queue.Waiting), int64(p.Priority),
			int64(p.Pods), int64(p.MinCount), p.Reason, age, needsColumn(p), p.Message,
		}
	})
}

func needsColumn(p *scheduling.PendingPodGroup) string {
	if len(p.Needs) == 0 {
		return "<none>"
	}
	var parts []string
	for name, q := range p.Needs {
		parts = append(parts, string(name)+" "+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
