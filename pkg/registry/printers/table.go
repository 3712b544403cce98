// Package printers builds the server-side tables that kubectl prints.
package printers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RowFunc returns the cells of one object's row; name and age are the
// standard first and age cells, already formatted.
type RowFunc func(obj runtime.Object, name, age string) []interface{}

// ToTable renders an object or a list as a Table with the given columns,
// carrying the list's resourceVersion and continue token so that
// `kubectl get --watch` and paging work.
func ToTable(obj runtime.Object, columns []metav1.TableColumnDefinition, row RowFunc) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: columns}
	if l, err := meta.ListAccessor(obj); err == nil {
		t.ResourceVersion = l.GetResourceVersion()
		t.Continue = l.GetContinue()
		t.RemainingItemCount = l.GetRemainingItemCount()
	} else if o, err := meta.Accessor(obj); err == nil {
		t.ResourceVersion = o.GetResourceVersion()
	}
	rows, err := table.MetaToTableRow(obj, func(o runtime.Object, _ metav1.Object, name, age string) ([]interface{}, error) {
		return row(o, name, age), nil
	})
	if err != nil {
		return nil, err
	}
	t.Rows = rows
	return t, nil
}
