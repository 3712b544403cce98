package podgroup

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

func testStrategy() podGroupStrategy {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return NewStrategy(scheme, true)
}

// newPodGroup returns a valid gang PodGroup as a client would send it, changed by mods.
func newPodGroup(mods ...func(*scheduling.PodGroup)) *scheduling.PodGroup {
	pg := &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "train",
			Namespace:       metav1.NamespaceDefault,
			ResourceVersion: "1",
			Labels:          map[string]string{"app": "train"},
			Annotations:     map[string]string{"note": "one"},
		},
		Spec: scheduling.PodGroupSpec{
			SchedulingPolicy: scheduling.PodGroupSchedulingPolicy{Gang: &scheduling.GangSchedulingPolicy{MinCount: 4}},
		},
	}
	for _, m := range mods {
		m(pg)
	}
	return pg
}

func withGates(names ...string) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) {
		pg.Spec.SchedulingGates = nil
		for _, n := range names {
			pg.Spec.SchedulingGates = append(pg.Spec.SchedulingGates, scheduling.PodGroupSchedulingGate{Name: n})
		}
	}
}

func withFinalizers(f ...string) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Finalizers = f }
}

func withGeneration(g int64) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Generation = g }
}

func withMinCount(n int32) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) {
		pg.Spec.SchedulingPolicy = scheduling.PodGroupSchedulingPolicy{Gang: &scheduling.GangSchedulingPolicy{MinCount: n}}
	}
}

func withStatus(s scheduling.PodGroupStatus) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Status = s }
}

func withPhase(p scheduling.PodGroupPhase) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Status.Phase = p }
}

func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
}

// runningStatus is a status the controller could have written for a running group.
func runningStatus() scheduling.PodGroupStatus {
	return scheduling.PodGroupStatus{
		Conditions: []metav1.Condition{
			condition(scheduling.ConditionAdmitted, metav1.ConditionTrue, "GangComplete"),
			condition(scheduling.ConditionScheduled, metav1.ConditionTrue, "MinCountBound"),
		},
		Phase: scheduling.PodGroupRunning,
		Pods:  4, Active: 4, Scheduled: 4, Ready: 4,
		ObservedGeneration: 1,
	}
}

func expectObject(t *testing.T, got, want *scheduling.PodGroup) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("unexpected object (-want +got):\n%s", diff.Diff(want, got))
	}
}

func TestStrategyScope(t *testing.T) {
	s := testStrategy()
	ctx := genericapirequest.NewDefaultContext()
	if !s.NamespaceScoped() {
		t.Error("PodGroup must be namespace scoped")
	}
	if s.AllowCreateOnUpdate(ctx) {
		t.Error("PodGroup must not allow create on update")
	}
	if !s.AllowUnconditionalUpdate(ctx) {
		t.Error("PodGroup must allow unconditional update")
	}
	if !NewStatusStrategy(s).NamespaceScoped() {
		t.Error("podgroups/status must be namespace scoped")
	}
}

func TestPrepareForCreate(t *testing.T) {
	f := scheduling.PodCleanupFinalizer
	tests := []struct {
		name      string
		obj, want *scheduling.PodGroup
	}{
		{"status is cleared and the phase is Pending",
			newPodGroup(withStatus(runningStatus())),
			newPodGroup(withGeneration(1), withFinalizers(f), withPhase(scheduling.PodGroupPending))},
		{"generation starts at 1",
			newPodGroup(withGeneration(7)),
			newPodGroup(withGeneration(1), withFinalizers(f), withPhase(scheduling.PodGroupPending))},
		{"the pod-cleanup finalizer is added",
			newPodGroup(),
			newPodGroup(withGeneration(1), withFinalizers(f), withPhase(scheduling.PodGroupPending))},
		{"the pod-cleanup finalizer is added after other finalizers",
			newPodGroup(withFinalizers("example.com/keep")),
			newPodGroup(withGeneration(1), withFinalizers("example.com/keep", f), withPhase(scheduling.PodGroupPending))},
		{"the pod-cleanup finalizer is not duplicated",
			newPodGroup(withFinalizers(f)),
			newPodGroup(withGeneration(1), withFinalizers(f), withPhase(scheduling.PodGroupPending))},
		{"the pod-cleanup finalizer is not duplicated among others",
			newPodGroup(withFinalizers("example.com/keep", f)),
			newPodGroup(withGeneration(1), withFinalizers("example.com/keep", f), withPhase(scheduling.PodGroupPending))},
		{"a group with gates starts Gated",
			newPodGroup(withGates("example.com/approval")),
			newPodGroup(withGates("example.com/approval"), withGeneration(1), withFinalizers(f), withPhase(scheduling.PodGroupGated))},
		{"a client-written phase is replaced",
			newPodGroup(withPhase(scheduling.PodGroupSucceeded)),
			newPodGroup(withGeneration(1), withFinalizers(f), withPhase(scheduling.PodGroupPending))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testStrategy().PrepareForCreate(genericapirequest.NewDefaultContext(), tc.obj)
			expectObject(t, tc.obj, tc.want)
		})
	}
}

// TestPrepareForCreateWithoutController: a server whose controller does not
// run (standalone, --controller=false) adds no pod-cleanup finalizer, which
// nothing would ever remove, and keeps the user's own.
func TestPrepareForCreateWithoutController(t *testing.T) {
	s := NewStrategy(testStrategy().ObjectTyper, false)
	tests := []struct {
		name      string
		obj, want *scheduling.PodGroup
	}{
		{"no finalizer is added",
			newPodGroup(),
			newPodGroup(withGeneration(1), withPhase(scheduling.PodGroupPending))},
		{"the user's finalizers are kept",
			newPodGroup(withFinalizers("example.com/keep")),
			newPodGroup(withGeneration(1), withFinalizers("example.com/keep"), withPhase(scheduling.PodGroupPending))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.PrepareForCreate(genericapirequest.NewDefaultContext(), tc.obj)
			expectObject(t, tc.obj, tc.want)
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	relabel := func(pg *scheduling.PodGroup) { pg.Labels = map[string]string{"app": "other"} }
	reannotate := func(pg *scheduling.PodGroup) { pg.Annotations = map[string]string{"note": "two"} }
	gated := scheduling.PodGroupStatus{Phase: scheduling.PodGroupGated}
	tests := []struct {
		name           string
		old, obj, want *scheduling.PodGroup
	}{
		{"the old status is kept",
			newPodGroup(withGeneration(2), withStatus(runningStatus())),
			newPodGroup(withGeneration(2), withStatus(scheduling.PodGroupStatus{Pods: 99, Phase: scheduling.PodGroupFailed})),
			newPodGroup(withGeneration(2), withStatus(runningStatus()))},
		{"a cleared status is restored",
			newPodGroup(withGeneration(2), withStatus(runningStatus())),
			newPodGroup(withGeneration(2)),
			newPodGroup(withGeneration(2), withStatus(runningStatus()))},
		{"no change keeps the generation",
			newPodGroup(withGeneration(2)),
			newPodGroup(withGeneration(2)),
			newPodGroup(withGeneration(2), withPhase(scheduling.PodGroupPending))},
		{"a label change does not bump the generation",
			newPodGroup(withGeneration(2)),
			newPodGroup(withGeneration(2), relabel),
			newPodGroup(withGeneration(2), relabel, withPhase(scheduling.PodGroupPending))},
		{"an annotation change does not bump the generation",
			newPodGroup(withGeneration(2)),
			newPodGroup(withGeneration(2), reannotate),
			newPodGroup(withGeneration(2), reannotate, withPhase(scheduling.PodGroupPending))},
		{"a status-only change does not bump the generation",
			newPodGroup(withGeneration(2), withStatus(runningStatus())),
			newPodGroup(withGeneration(2), withStatus(scheduling.PodGroupStatus{Pods: 1})),
			newPodGroup(withGeneration(2), withStatus(runningStatus()))},
		{"a minCount change bumps the generation",
			newPodGroup(withGeneration(2), withStatus(runningStatus())),
			newPodGroup(withGeneration(2), withMinCount(8)),
			newPodGroup(withGeneration(3), withMinCount(8), withStatus(runningStatus()))},
		{"removing a gate bumps the generation and keeps the group Gated",
			newPodGroup(withGeneration(1), withGates("a", "b"), withStatus(gated)),
			newPodGroup(withGeneration(1), withGates("b")),
			newPodGroup(withGeneration(2), withGates("b"), withStatus(gated))},
		{"removing the last gate moves the group from Gated to Pending",
			newPodGroup(withGeneration(1), withGates("a"), withStatus(gated)),
			newPodGroup(withGeneration(1)),
			newPodGroup(withGeneration(2), withPhase(scheduling.PodGroupPending))},
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
	old := newPodGroup(withGeneration(3), withGates("a"), withFinalizers(scheduling.PodCleanupFinalizer),
		func(pg *scheduling.PodGroup) { pg.OwnerReferences = []metav1.OwnerReference{owner} },
		withStatus(scheduling.PodGroupStatus{Phase: scheduling.PodGroupGated}))
	obj := newPodGroup(withGeneration(9), withMinCount(1), func(pg *scheduling.PodGroup) {
		pg.Labels = map[string]string{"sneaky": "label"}
		pg.Annotations = map[string]string{"sneaky": "annotation"}
		pg.Finalizers = nil
		pg.OwnerReferences = nil
		pg.Status = scheduling.PodGroupStatus{Pods: 2, Gated: 2, Active: 2, ObservedGeneration: 3, Phase: scheduling.PodGroupRunning}
	})
	want := old.DeepCopy()
	want.Status = scheduling.PodGroupStatus{Pods: 2, Gated: 2, Active: 2, ObservedGeneration: 3, Phase: scheduling.PodGroupGated}

	NewStatusStrategy(testStrategy()).PrepareForUpdate(genericapirequest.NewDefaultContext(), obj, old)
	// The old spec, labels, annotations, finalizers, owner references and
	// generation are kept; the new status is taken, with a derived phase.
	expectObject(t, obj, want)
}

func TestStatusUpdateDerivesPhase(t *testing.T) {
	const (
		True  = metav1.ConditionTrue
		False = metav1.ConditionFalse
	)
	admitted := condition(scheduling.ConditionAdmitted, True, "GangComplete")
	notAdmitted := condition(scheduling.ConditionAdmitted, False, "Waiting")
	scheduled := condition(scheduling.ConditionScheduled, True, "MinCountBound")
	notScheduled := condition(scheduling.ConditionScheduled, False, "Waiting")
	succeeded := condition(scheduling.ConditionFinished, True, scheduling.ReasonSucceeded)
	failed := condition(scheduling.ConditionFinished, True, scheduling.ReasonFailed)
	notFinished := condition(scheduling.ConditionFinished, False, "Running")
	tests := []struct {
		name       string
		gates      []string
		conditions []metav1.Condition
		want       scheduling.PodGroupPhase
	}{
		{"Finished with reason Failed is Failed", nil, []metav1.Condition{admitted, scheduled, failed}, scheduling.PodGroupFailed},
		{"Finished with reason Succeeded is Succeeded", nil, []metav1.Condition{admitted, scheduled, succeeded}, scheduling.PodGroupSucceeded},
		{"Finished wins over gates", []string{"a"}, []metav1.Condition{failed}, scheduling.PodGroupFailed},
		{"Admitted and Scheduled is Running", nil, []metav1.Condition{admitted, scheduled}, scheduling.PodGroupRunning},
		{"Admitted and Scheduled but not Finished is Running", nil, []metav1.Condition{admitted, scheduled, notFinished}, scheduling.PodGroupRunning},
		{"Admitted alone is Admitted", nil, []metav1.Condition{admitted}, scheduling.PodGroupAdmitted},
		{"Admitted with Scheduled False is Admitted", nil, []metav1.Condition{admitted, notScheduled}, scheduling.PodGroupAdmitted},
		{"gates and no Admitted is Gated", []string{"a"}, nil, scheduling.PodGroupGated},
		{"gates and Admitted False is Gated", []string{"a"}, []metav1.Condition{notAdmitted}, scheduling.PodGroupGated},
		{"no conditions and no gates is Pending", nil, nil, scheduling.PodGroupPending},
		{"Admitted False and no gates is Pending", nil, []metav1.Condition{notAdmitted}, scheduling.PodGroupPending},
		{"Scheduled without Admitted is Pending", nil, []metav1.Condition{scheduled}, scheduling.PodGroupPending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := newPodGroup(withGates(tc.gates...))
			// The client writes a wrong phase and no gates: both must be ignored.
			obj := newPodGroup(withStatus(scheduling.PodGroupStatus{Conditions: tc.conditions, Phase: "Bogus"}))
			NewStatusStrategy(testStrategy()).PrepareForUpdate(genericapirequest.NewDefaultContext(), obj, old)
			if obj.Status.Phase != tc.want {
				t.Errorf("phase = %q, want %q", obj.Status.Phase, tc.want)
			}
			if got := scheduling.DerivePhase(obj); got != tc.want {
				t.Errorf("DerivePhase = %q, want %q", got, tc.want)
			}
		})
	}
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
	tests := []struct {
		name       string
		pg         *scheduling.PodGroup
		wantFields fields.Set
	}{
		{"a group without workloadRef has an empty workloadName",
			newPodGroup(withPhase(scheduling.PodGroupGated)),
			fields.Set{"metadata.name": "train", "metadata.namespace": "default", "spec.workloadRef.workloadName": "", "status.phase": "Gated"}},
		{"a group with workloadRef exposes its workloadName",
			newPodGroup(withPhase(scheduling.PodGroupRunning), func(pg *scheduling.PodGroup) {
				pg.Spec.WorkloadRef = &scheduling.WorkloadReference{WorkloadName: "job", TemplateName: "workers"}
			}),
			fields.Set{"metadata.name": "train", "metadata.namespace": "default", "spec.workloadRef.workloadName": "job", "status.phase": "Running"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, f, err := GetAttrs(tc.pg)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(l, labels.Set(tc.pg.Labels)) {
				t.Errorf("labels = %v, want %v", l, tc.pg.Labels)
			}
			if !apiequality.Semantic.DeepEqual(f, tc.wantFields) {
				t.Errorf("fields = %v, want %v", f, tc.wantFields)
			}
		})
	}
	if _, _, err := GetAttrs(&scheduling.Workload{}); err == nil {
		t.Error("GetAttrs of a Workload must fail")
	}
}

func TestMatcher(t *testing.T) {
	pg := newPodGroup(withPhase(scheduling.PodGroupRunning), func(pg *scheduling.PodGroup) {
		pg.Spec.WorkloadRef = &scheduling.WorkloadReference{WorkloadName: "job", TemplateName: "workers"}
	})
	tests := []struct {
		name     string
		label    string
		field    string
		wantFits bool
	}{
		{"status.phase selects a matching group", "", "status.phase=Running", true},
		{"status.phase rejects another phase", "", "status.phase=Pending", false},
		{"spec.workloadRef.workloadName selects a matching group", "", "spec.workloadRef.workloadName=job", true},
		{"spec.workloadRef.workloadName rejects another workload", "", "spec.workloadRef.workloadName=other", false},
		{"metadata.name selects a matching group", "", "metadata.name=train", true},
		{"labels select a matching group", "app=train", "", true},
		{"labels reject another group", "app=other", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := labels.Parse(tc.label)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := fields.ParseSelector(tc.field)
			if err != nil {
				t.Fatal(err)
			}
			predicate := Matcher(ls, fs)
			fits, err := predicate.Matches(pg)
			if err != nil {
				t.Fatal(err)
			}
			if fits != tc.wantFits {
				t.Errorf("Matches = %v, want %v", fits, tc.wantFits)
			}
		})
	}
}

func TestStrategyValidates(t *testing.T) {
	ctx := genericapirequest.NewDefaultContext()
	s := testStrategy()
	bad := newPodGroup(withMinCount(0))
	if errs := s.Validate(ctx, bad); len(errs) != 1 || errs[0].Field != "spec.schedulingPolicy.gang.minCount" {
		t.Errorf("Validate = %v, want one error at spec.schedulingPolicy.gang.minCount", errs)
	}
	if errs := s.ValidateUpdate(ctx, newPodGroup(withGates("a")), newPodGroup()); len(errs) != 1 || errs[0].Field != "spec.schedulingGates[0]" {
		t.Errorf("ValidateUpdate = %v, want one error at spec.schedulingGates[0]", errs)
	}
	old := newPodGroup(withStatus(scheduling.PodGroupStatus{Succeeded: 2}))
	if errs := NewStatusStrategy(s).ValidateUpdate(ctx, newPodGroup(withStatus(scheduling.PodGroupStatus{Succeeded: 1})), old); len(errs) != 1 || errs[0].Field != "status.succeeded" {
		t.Errorf("status ValidateUpdate = %v, want one error at status.succeeded", errs)
	}
}

func TestConvertToTable(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-10 * 24 * time.Hour))
	gang := newPodGroup(func(pg *scheduling.PodGroup) {
		pg.CreationTimestamp = created
		pg.Spec.WorkloadRef = &scheduling.WorkloadReference{WorkloadName: "job", TemplateName: "workers"}
		pg.Spec.SchedulingGates = []scheduling.PodGroupSchedulingGate{{Name: "example.com/a"}, {Name: "b"}}
		pg.Spec.Priority = func() *int32 { p := int32(10); return &p }()
		pg.Status = scheduling.PodGroupStatus{Phase: scheduling.PodGroupRunning, Pods: 5, Scheduled: 4, Ready: 3, Succeeded: 2, Failed: 1}
	})
	basic := newPodGroup(func(pg *scheduling.PodGroup) {
		pg.Name = "serve"
		pg.CreationTimestamp = created
		pg.Spec.SchedulingPolicy = scheduling.PodGroupSchedulingPolicy{Basic: &scheduling.BasicSchedulingPolicy{}}
		pg.Status.Phase = scheduling.PodGroupPending
	})
	roles := newPodGroup(func(pg *scheduling.PodGroup) {
		pg.Name = "spark"
		pg.CreationTimestamp = created
		pg.Spec.SchedulingPolicy = scheduling.PodGroupSchedulingPolicy{Gang: &scheduling.GangSchedulingPolicy{MinCount: 11}}
		pg.Spec.Roles = []scheduling.PodGroupRole{{Name: "driver", Count: 1}, {Name: "worker", Count: 10}}
		// A role without a status entry has no active pods yet.
		pg.Status = scheduling.PodGroupStatus{Phase: scheduling.PodGroupPending, Pods: 1, Roles: []scheduling.PodGroupRoleStatus{{Name: "driver", Active: 1}},
			TopologyDomain: &scheduling.TopologyDomain{Key: "example.com/rack", Value: "r3"}}
	})
	gangRow := []interface{}{"train", "Gang", int64(4), int64(5), int64(4), int64(2), int64(1), "Running", "10d", "job/workers", "example.com/a,b", "10", "<none>", "<none>"}
	basicRow := []interface{}{"serve", "Basic", int64(1), int64(0), int64(0), int64(0), int64(0), "Pending", "10d", "<none>", "<none>", "<none>", "<none>", "<none>"}
	rolesRow := []interface{}{"spark", "Gang", int64(11), int64(1), int64(0), int64(0), int64(0), "Pending", "10d", "<none>", "<none>", "<none>", "driver:1/1,worker:0/10", "example.com/rack=r3"}

	tests := []struct {
		name     string
		obj      runtime.Object
		wantRows [][]interface{}
		wantRV   string
	}{
		{"a gang group prints its policy, minCount, counters, phase and wide columns", gang, [][]interface{}{gangRow}, "1"},
		{"a basic group prints Basic, a minCount of 1 and <none> wide columns", basic, [][]interface{}{basicRow}, "1"},
		{"a group with roles prints each role's active pods over its count, and its topology domain", roles, [][]interface{}{rolesRow}, "1"},
		{"a list prints one row per item", &scheduling.PodGroupList{
			ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items:    []scheduling.PodGroup{*gang, *basic},
		}, [][]interface{}{gangRow, basicRow}, "42"},
		{"an empty list prints no rows", &scheduling.PodGroupList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, [][]interface{}{}, "7"},
	}
	wantColumns := []string{"NAME", "POLICY", "MIN", "PODS", "SCHEDULED", "SUCCEEDED", "FAILED", "PHASE", "AGE", "WORKLOAD", "GATES", "PRIORITY", "ROLES", "DOMAIN"}
	const wideFrom = 9
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
				if len(row.Cells) != len(table.ColumnDefinitions) {
					t.Errorf("row %d has %d cells for %d columns", i, len(row.Cells), len(table.ColumnDefinitions))
				}
				if !apiequality.Semantic.DeepEqual(row.Cells, tc.wantRows[i]) {
					t.Errorf("row %d = %#v, want %#v", i, row.Cells, tc.wantRows[i])
				}
				if row.Object.Object == nil {
					t.Errorf("row %d does not carry its object", i)
				}
			}
		})
	}
}
