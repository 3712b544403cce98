package workload

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/registry/printers"
)

// tableConvertor prints Workloads for `kubectl get`.
type tableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the Workload."},
	{Name: "Templates", Type: "string", Description: "Names of the pod-group templates."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
	{Name: "Controller", Type: "string", Priority: 1, Description: "The object that manages this Workload."},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	return printers.ToTable(obj, columns, func(o runtime.Object, name, age string) []interface{} {
		w := o.(*scheduling.Workload)
		names := make([]string, len(w.Spec.PodGroupTemplates))
		for i, t := range w.Spec.PodGroupTemplates {
			names[i] = t.Name
		}
		controller := "<none>"
		if ref := w.Spec.ControllerRef; ref != nil {
			controller = ref.Kind + "/" + ref.Name
		}
		return []interface{}{name, strings.Join(names, ","), age, controller}
	})
}
