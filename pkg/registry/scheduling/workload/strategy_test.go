package workload

import (
	"context"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/install"
)

func testStrategy() workloadStrategy {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return NewStrategy(scheme)
}

// newWorkload returns a valid Workload as a client would send it, changed by mods.
func newWorkload(mods ...func(*scheduling.Workload)) *scheduling.Workload {
	w := &scheduling.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "train",
			Namespace:       metav1.NamespaceDefault,
			ResourceVersion: "1",
			Labels:          map[string]string{"app": "train"},
			Annotations:     map[string]string{"note": "one"},
		},
		Spec: scheduling.WorkloadSpec{
			PodGroupTemplates: []scheduling.PodGroupTemplate{
				{Name: "driver", SchedulingPolicy: scheduling.PodGroupSchedulingPolicy{Basic: &scheduling.BasicSchedulingPolicy{}}},
				{Name: "workers", SchedulingPolicy: scheduling.PodGroupSchedulingPolicy{Gang: &scheduling.GangSchedulingPolicy{MinCount: 4}}},
			},
		},
	}
	for _, m := range mods {
		m(w)
	}
	return w
}

func withGeneration(g int64) func(*scheduling.Workload) {
	return func(w *scheduling.Workload) { w.Generation = g }
}

func withWorkersMinCount(n int32) func(*scheduling.Workload) {
	return func(w *scheduling.Workload) {
		w.Spec.PodGroupTemplates[1].SchedulingPolicy.Gang = &scheduling.GangSchedulingPolicy{MinCount: n}
	}
}

func withStatus(s scheduling.WorkloadStatus) func(*scheduling.Workload) {
	return func(w *scheduling.Workload) { w.Status = s }
}

func readyStatus() scheduling.WorkloadStatus {
	return scheduling.WorkloadStatus{
		Conditions: []metav1.Condition{{
			Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllGroupsAdmitted",
			LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		}},
		ObservedGeneration: 2,
	}
}

func expectObject(t *testing.T, got, want *scheduling.Workload) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("unexpected object (-want +got):\n%s", diff.Diff(want, got))
	}
}

func TestStrategyScope(t *testing.T) {
	s := testStrategy()
	ctx := genericapirequest.NewDefaultContext()
	if !s.NamespaceScoped() {
		t.Error("Workload must be namespace scoped")
	}
	if s.AllowCreateOnUpdate(ctx) {
		t.Error("Workload must not allow create on update")
	}
	if !s.AllowUnconditionalUpdate(ctx) {
		t.Error("Workload must allow unconditional update")
	}
	if !NewStatusStrategy(s).NamespaceScoped() {
		t.Error("workloads/status must be namespace scoped")
	}
}

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		name      string
		obj, want *scheduling.Workload
	}{
		{"status is cleared", newWorkload(withStatus(readyStatus())), newWorkload(withGeneration(1))},
		{"generation starts at 1", newWorkload(withGeneration(5)), newWorkload(withGeneration(1))},
		{"no finalizer is added", newWorkload(), newWorkload(withGeneration(1))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testStrategy().PrepareForCreate(genericapirequest.NewDefaultContext(), tc.obj)
			expectObject(t, tc.obj, tc.want)
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	relabel := func(w *scheduling.Workload) { w.Labels = map[string]string{"app": "other"} }
	reannotate := func(w *scheduling.Workload) { w.Annotations = map[string]string{"note": "two"} }
	setController := func(w *scheduling.Workload) {
		w.Spec.ControllerRef = &scheduling.TypedLocalObjectReference{APIGroup: "batch", Kind: "Job", Name: "train"}
	}
	tests := []struct {
		name           string
		old, obj, want *scheduling.Workload
	}{
		{"the old status is kept",
			newWorkload(withGeneration(2), withStatus(readyStatus())),
			newWorkload(withGeneration(2), withStatus(scheduling.WorkloadStatus{ObservedGeneration: 9})),
			newWorkload(withGeneration(2), withStatus(readyStatus()))},
		{"a cleared status is restored",
			newWorkload(withGeneration(2), withStatus(readyStatus())),
			newWorkload(withGeneration(2)),
			newWorkload(withGeneration(2), withStatus(readyStatus()))},
		{"no change keeps the generation", newWorkload(withGeneration(2)), newWorkload(withGeneration(2)), newWorkload(withGeneration(2))},
		{"a label change does not bump the generation", newWorkload(withGeneration(2)), newWorkload(withGeneration(2), relabel), newWorkload(withGeneration(2), relabel)},
		{"an annotation change does not bump the generation", newWorkload(withGeneration(2)), newWorkload(withGeneration(2), reannotate), newWorkload(withGeneration(2), reannotate)},
		{"a minCount change bumps the generation",
			newWorkload(withGeneration(2), withStatus(readyStatus())),
			newWorkload(withGeneration(2), withWorkersMinCount(8)),
			newWorkload(withGeneration(3), withWorkersMinCount(8), withStatus(readyStatus()))},
		{"setting controllerRef bumps the generation", newWorkload(withGeneration(2)), newWorkload(withGeneration(2), setController), newWorkload(withGeneration(3), setController)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testStrategy().PrepareForUpdate(genericapirequest.NewDefaultContext(), tc.obj, tc.old)
			expectObject(t, tc.obj, tc.want)
		})
	}
}

func TestStatusPrepareForUpdate(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: types.UID("job-uid")}
	old := newWorkload(withGeneration(3), func(w *scheduling.Workload) {
		w.Finalizers = []string{"example.com/keep"}
		w.OwnerReferences = []metav1.OwnerReference{owner}
	})
	obj := newWorkload(withGeneration(9), withWorkersMinCount(1), withStatus(readyStatus()), func(w *scheduling.Workload) {
		w.Labels = map[string]string{"sneaky": "label"}
		w.Annotations = map[string]string{"sneaky": "annotation"}
		w.Finalizers = nil
		w.OwnerReferences = nil
	})
	want := old.DeepCopy()
	want.Status = readyStatus()

	NewStatusStrategy(testStrategy()).PrepareForUpdate(genericapirequest.NewDefaultContext(), obj, old)
	// The old spec, labels, annotations, finalizers, owner references and
	// generation are kept; the new status is taken.
	expectObject(t, obj, want)
}

func TestGetResetFields(t *testing.T) {
	const gv = fieldpath.APIVersion("scheduling.muster.dev/v1alpha1")
	s := testStrategy()
	tests := []struct {
		name string
		got  map[fieldpath.APIVersion]*fieldpath.Set
		want *fieldpath.Set
	}{
		{"a main-resource write resets status", s.GetResetFields(),
			fieldpath.NewSet(fieldpath.MakePathOrDie("status"))},
		{"a status write resets spec and the metadata it restores", NewStatusStrategy(s).GetResetFields(),
			fieldpath.NewSet(
				fieldpath.MakePathOrDie("spec"),
				fieldpath.MakePathOrDie("metadata", "labels"),
				fieldpath.MakePathOrDie("metadata", "annotations"),
				fieldpath.MakePathOrDie("metadata", "finalizers"),
				fieldpath.MakePathOrDie("metadata", "ownerReferences"),
			)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.got) != 1 || tc.got[gv] == nil {
				t.Fatalf("reset fields must be declared for exactly %s, got %v", gv, tc.got)
			}
			if !tc.got[gv].Equals(tc.want) {
				t.Errorf("reset fields = %s, want %s", tc.got[gv], tc.want)
			}
		})
	}
}

func TestGetAttrs(t *testing.T) {
	w := newWorkload()
	l, f, err := GetAttrs(w)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(l, labels.Set(w.Labels)) {
		t.Errorf("labels = %v, want %v", l, w.Labels)
	}
	wantFields := fields.Set{"metadata.name": "train", "metadata.namespace": "default"}
	if !apiequality.Semantic.DeepEqual(f, wantFields) {
		t.Errorf("fields = %v, want %v", f, wantFields)
	}
	if _, _, err := GetAttrs(&scheduling.PodGroup{}); err == nil {
		t.Error("GetAttrs of a PodGroup must fail")
	}
}

func TestStrategyValidates(t *testing.T) {
	ctx := genericapirequest.NewDefaultContext()
	s := testStrategy()
	if errs := s.Validate(ctx, newWorkload(withWorkersMinCount(0))); len(errs) != 1 || errs[0].Field != "spec.podGroupTemplates[1].schedulingPolicy.gang.minCount" {
		t.Errorf("Validate = %v, want one error at spec.podGroupTemplates[1].schedulingPolicy.gang.minCount", errs)
	}
	grown := newWorkload(func(w *scheduling.Workload) {
		w.Spec.PodGroupTemplates = append(w.Spec.PodGroupTemplates, scheduling.PodGroupTemplate{
			Name: "extra", SchedulingPolicy: scheduling.PodGroupSchedulingPolicy{Basic: &scheduling.BasicSchedulingPolicy{}},
		})
	})
	if errs := s.ValidateUpdate(ctx, grown, newWorkload()); len(errs) != 1 || errs[0].Field != "spec.podGroupTemplates[2]" {
		t.Errorf("ValidateUpdate = %v, want one error at spec.podGroupTemplates[2]", errs)
	}
	bad := newWorkload(withStatus(scheduling.WorkloadStatus{ObservedGeneration: -1}))
	if errs := NewStatusStrategy(s).ValidateUpdate(ctx, bad, newWorkload()); len(errs) != 1 || errs[0].Field != "status.observedGeneration" {
		t.Errorf("status ValidateUpdate = %v, want one error at status.observedGeneration", errs)
	}
}

func TestConvertToTable(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-10 * 24 * time.Hour))
	owned := newWorkload(func(w *scheduling.Workload) {
		w.CreationTimestamp = created
		w.Spec.ControllerRef = &scheduling.TypedLocalObjectReference{APIGroup: "batch", Kind: "Job", Name: "train"}
	})
	plain := newWorkload(func(w *scheduling.Workload) {
		w.Name = "serve"
		w.CreationTimestamp = created
		w.Spec.PodGroupTemplates = w.Spec.PodGroupTemplates[:1]
	})
	ownedRow := []interface{}{"train", "driver,workers", "10d", "Job/train"}
	plainRow := []interface{}{"serve", "driver", "10d", "<none>"}

	tests := []struct {
		name     string
		obj      runtime.Object
		wantRows [][]interface{}
		wantRV   string
	}{
		{"a workload prints its template names and its controller", owned, [][]interface{}{ownedRow}, "1"},
		{"a workload without controller prints <none>", plain, [][]interface{}{plainRow}, "1"},
		{"a list prints one row per item", &scheduling.WorkloadList{
			ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items:    []scheduling.Workload{*owned, *plain},
		}, [][]interface{}{ownedRow, plainRow}, "42"},
		{"an empty list prints no rows", &scheduling.WorkloadList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, [][]interface{}{}, "7"},
	}
	wantColumns := []string{"NAME", "TEMPLATES", "AGE", "CONTROLLER"}
	const wideFrom = 3
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, err := tableConvertor{}.ConvertToTable(context.Background(), tc.obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, c := range table.ColumnDefinitions {
				got = append(got, strings.ToUpper(c.Name))
				// Priority 1 columns appear only with -o wide.
				wantPriority := int32(0)
				if i >= wideFrom {
					wantPriority = 1
				}
				if c.Priority != wantPriority {
					t.Errorf("column %s has priority %d, want %d", c.Name, c.Priority, wantPriority)
				}
			}
			if strings.Join(got, " ") != strings.Join(wantColumns, " ") {
				t.Errorf("columns = %v, want %v", got, wantColumns)
			}
			if table.ResourceVersion != tc.wantRV {
				t.Errorf("resourceVersion = %q, want %q", table.ResourceVersion, tc.wantRV)
			}
			if len(table.Rows) != len(tc.wantRows) {
				t.Fatalf("got %d rows, want %d", len(table.Rows), len(tc.wantRows))
			}
			for i, row := range table.Rows {
				if !apiequality.Semantic.DeepEqual(row.Cells, tc.wantRows[i]) {
					t.Errorf("row %d = %#v, want %#v", i, row.Cells, tc.wantRows[i])
				}
			}
		})
	}
}
