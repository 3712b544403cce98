package validation

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// workload returns a valid Workload with one gang template, changed by mods.
func workload(mods ...func(*scheduling.Workload)) *scheduling.Workload {
	w := &scheduling.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", ResourceVersion: "1"},
		Spec: scheduling.WorkloadSpec{
			PodGroupTemplates: []scheduling.PodGroupTemplate{{Name: "workers", SchedulingPolicy: gang(4)}},
		},
	}
	for _, m := range mods {
		m(w)
	}
	return w
}

func workloadNamed(name string) func(*scheduling.Workload) {
	return func(w *scheduling.Workload) { w.Name = name }
}

// templates replaces the templates with one gang(2) template per name.
func templates(names ...string) func(*scheduling.Workload) {
	return func(w *scheduling.Workload) {
		w.Spec.PodGroupTemplates = nil
		for _, n := range names {
			w.Spec.PodGroupTemplates = append(w.Spec.PodGroupTemplates, scheduling.PodGroupTemplate{Name: n, SchedulingPolicy: gang(2)})
		}
	}
}

func nTemplates(n int) func(*scheduling.Workload) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t%d", i)
	}
	return templates(names...)
}

func template(i int, mod func(*scheduling.PodGroupTemplate)) func(*scheduling.Workload) {
	return func(w *scheduling.Workload) { mod(&w.Spec.PodGroupTemplates[i]) }
}

func templatePolicy(i int, p scheduling.PodGroupSchedulingPolicy) func(*scheduling.Workload) {
	return template(i, func(t *scheduling.PodGroupTemplate) { t.SchedulingPolicy = p })
}

func controllerRef(group, kind, name string) func(*scheduling.Workload) {
	return func(w *scheduling.Workload) {
		w.Spec.ControllerRef = &scheduling.TypedLocalObjectReference{APIGroup: group, Kind: kind, Name: name}
	}
}

func TestValidateWorkload(t *testing.T) {
	both := scheduling.PodGroupSchedulingPolicy{Basic: &scheduling.BasicSchedulingPolicy{}, Gang: &scheduling.GangSchedulingPolicy{MinCount: 2}}
	tests := []struct {
		name string
		w    *scheduling.Workload
		want []want
	}{
		{"one gang template is valid", workload(), nil},
		{"a basic template is valid", workload(templatePolicy(0, basic())), nil},
		{"8 templates are valid", workload(nTemplates(8)), nil},
		{"a template with priority is valid", workload(template(0, func(t *scheduling.PodGroupTemplate) { t.Priority = ptrTo[int32](7) })), nil},
		{"a controllerRef with a group is valid", workload(controllerRef("batch", "Job", "train")), nil},
		{"a controllerRef in the core group is valid", workload(controllerRef("", "Pod", "train-0")), nil},

		{"name is required", workload(workloadNamed("")), []want{required("metadata.name")}},
		{"name must be a DNS subdomain", workload(workloadNamed("Train_1")), []want{invalid("metadata.name")}},

		{"0 templates: at least one is required", workload(templates()), []want{required("spec.podGroupTemplates")}},
		{"9 templates are too many", workload(nTemplates(9)), []want{tooMany("spec.podGroupTemplates")}},
		{"template name is required", workload(templates("a", "")), []want{required("spec.podGroupTemplates[1].name")}},
		{"template name must be a DNS label, not a subdomain", workload(templates("workers.v1")), []want{invalid("spec.podGroupTemplates[0].name")}},
		{"template name must be lower case", workload(templates("Workers")), []want{invalid("spec.podGroupTemplates[0].name")}},
		{"template names are unique", workload(templates("a", "b", "a")), []want{duplicate("spec.podGroupTemplates[2].name")}},
		{"template policy with no member is required", workload(templatePolicy(0, scheduling.PodGroupSchedulingPolicy{})), []want{required("spec.podGroupTemplates[0].schedulingPolicy")}},
		{"template policy with both members is invalid", workload(templatePolicy(0, both)), []want{invalid("spec.podGroupTemplates[0].schedulingPolicy")}},
		{"template gang.minCount 0 is invalid", workload(templatePolicy(0, gang(0))), []want{invalid("spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")}},

		{"controllerRef.kind is required", workload(controllerRef("batch", "", "train")), []want{required("spec.controllerRef.kind")}},
		{"controllerRef.name is required", workload(controllerRef("batch", "Job", "")), []want{required("spec.controllerRef.name")}},
		{"controllerRef kind and name are both required", workload(controllerRef("", "", "")), []want{required("spec.controllerRef.kind"), required("spec.controllerRef.name")}},
		{"controllerRef.name must be a path segment", workload(controllerRef("batch", "Job", "a/b")), []want{invalid("spec.controllerRef.name")}},
		{"controllerRef.kind must be a path segment", workload(controllerRef("batch", "Jo%b", "train")), []want{invalid("spec.controllerRef.kind")}},
		{"controllerRef.apiGroup must be a DNS subdomain", workload(controllerRef("Batch_Group", "Job", "train")), []want{invalid("spec.controllerRef.apiGroup")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateWorkload(tc.w), tc.want...)
		})
	}
}

func TestValidateWorkloadUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *scheduling.Workload
		want     []want
	}{
		{"no change is valid", workload(), workload(), nil},
		{"labels may change", workload(), workload(func(w *scheduling.Workload) { w.Labels = map[string]string{"a": "b"} }), nil},

		{"controllerRef may be set when it was unset", workload(), workload(controllerRef("batch", "Job", "train")), nil},
		{"controllerRef cannot be unset once set", workload(controllerRef("batch", "Job", "train")), workload(), []want{invalid("spec.controllerRef")}},
		{"controllerRef.name cannot change once set", workload(controllerRef("batch", "Job", "train")), workload(controllerRef("batch", "Job", "other")), []want{invalid("spec.controllerRef")}},
		{"controllerRef.kind cannot change once set", workload(controllerRef("batch", "Job", "train")), workload(controllerRef("batch", "CronJob", "train")), []want{invalid("spec.controllerRef")}},
		{"controllerRef.apiGroup cannot change once set", workload(controllerRef("batch", "Job", "train")), workload(controllerRef("example.com", "Job", "train")), []want{invalid("spec.controllerRef")}},

		{"template gang.minCount may change", workload(), workload(templatePolicy(0, gang(8))), nil},
		{"template policy may switch from gang to basic", workload(), workload(templatePolicy(0, basic())), nil},
		{"template policy may switch from basic to gang", workload(templatePolicy(0, basic())), workload(), nil},
		{"a changed template policy must still be valid", workload(), workload(templatePolicy(0, gang(0))), []want{invalid("spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")}},
		{"templates may be reordered", workload(templates("a", "b")), workload(templates("b", "a")), nil},
		{"a template cannot be added", workload(templates("a")), workload(templates("a", "b")), []want{forbidden("spec.podGroupTemplates[1]")}},
		{"a template cannot be removed", workload(templates("a", "b")), workload(templates("b")), []want{forbidden("spec.podGroupTemplates")}},
		{"removing every template is required and forbidden", workload(templates("a")), workload(templates()), []want{required("spec.podGroupTemplates"), forbidden("spec.podGroupTemplates")}},
		{"a template cannot be renamed", workload(templates("a", "b")), workload(templates("a", "c")), []want{forbidden("spec.podGroupTemplates[1]"), forbidden("spec.podGroupTemplates")}},
		{"template priority cannot change", workload(template(0, func(t *scheduling.PodGroupTemplate) { t.Priority = ptrTo[int32](1) })), workload(template(0, func(t *scheduling.PodGroupTemplate) { t.Priority = ptrTo[int32](2) })), []want{forbidden("spec.podGroupTemplates[0]")}},
		{"template priority cannot be set after creation", workload(), workload(template(0, func(t *scheduling.PodGroupTemplate) { t.Priority = ptrTo[int32](2) })), []want{forbidden("spec.podGroupTemplates[0]")}},
		{"template priority cannot be cleared", workload(template(0, func(t *scheduling.PodGroupTemplate) { t.Priority = ptrTo[int32](1) })), workload(), []want{forbidden("spec.podGroupTemplates[0]")}},

		{"name is immutable", workload(), workload(workloadNamed("other")), []want{invalid("metadata.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateWorkloadUpdate(tc.new, tc.old), tc.want...)
		})
	}
}

func TestValidateWorkloadStatusUpdate(t *testing.T) {
	tests := []struct {
		name   string
		status scheduling.WorkloadStatus
		want   []want
	}{
		{"an empty status is valid", scheduling.WorkloadStatus{}, nil},
		{"valid conditions and observedGeneration are valid", scheduling.WorkloadStatus{Conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "AllGroupsAdmitted")}, ObservedGeneration: 3}, nil},
		{"observedGeneration must not be negative", scheduling.WorkloadStatus{ObservedGeneration: -1}, []want{invalid("status.observedGeneration")}},
		{"condition reason is required", scheduling.WorkloadStatus{Conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "")}}, []want{required("status.conditions[0].reason")}},
		{"condition status must be True, False or Unknown", scheduling.WorkloadStatus{Conditions: []metav1.Condition{cond("Ready", "Yes", "R")}}, []want{notSupported("status.conditions[0].status")}},
		{"condition types are unique", scheduling.WorkloadStatus{Conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, "R"), cond("Ready", metav1.ConditionFalse, "R")}}, []want{duplicate("status.conditions[1]")}},
		{"condition observedGeneration must not be negative", scheduling.WorkloadStatus{Conditions: []metav1.Condition{func() metav1.Condition {
			c := cond("Ready", metav1.ConditionTrue, "R")
			c.ObservedGeneration = -1
			return c
		}()}}, []want{invalid("status.conditions[0].observedGeneration")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := workload()
			w := workload(func(w *scheduling.Workload) { w.Status = tc.status })
			expectErrors(t, ValidateWorkloadStatusUpdate(w, old), tc.want...)
		})
	}
}
