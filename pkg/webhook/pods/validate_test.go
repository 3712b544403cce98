package pods

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// want is one expected error: its type and its exact field path.
type want struct {
	typ   field.ErrorType
	field string
}

func (w want) String() string { return fmt.Sprintf("%s %s", w.field, w.typ) }

func invalid(f string) want   { return want{field.ErrorTypeInvalid, f} }
func required(f string) want  { return want{field.ErrorTypeRequired, f} }
func forbidden(f string) want { return want{field.ErrorTypeForbidden, f} }

// Field paths as they appear in messages.
const (
	groupField    = "metadata.labels[scheduling.muster.dev/pod-group]"
	managedField  = "metadata.labels[scheduling.muster.dev/managed]"
	minCountField = "metadata.annotations[scheduling.muster.dev/min-count]"
	workloadField = "metadata.annotations[scheduling.muster.dev/workload]"
	templateField = "metadata.annotations[scheduling.muster.dev/template]"
)

// expectErrors fails unless errs holds exactly the wanted errors, by type and
// field path, in any order, and each error's message names its field.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, want{e.Type, e.Field}.String())
		if !strings.HasPrefix(e.Error(), e.Field+": ") {
			t.Errorf("message %q does not start with its field %q", e.Error(), e.Field)
		}
	}
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, w.String())
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors differ\nwant:\n  %s\ngot:\n  %s\nfull errors: %v",
			strings.Join(exp, "\n  "), strings.Join(got, "\n  "), errs)
	}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []want
	}{
		{"a pod without Muster's labels is valid", pod(label("app", "x")), nil},
		{"a pod with no labels or annotations is valid", pod(), nil},
		{"a group name is valid", pod(inGroup("train")), nil},
		{"a dotted group name is a valid DNS subdomain", pod(inGroup("train.v1")), nil},
		{"min-count 1 is valid", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "1")), nil},
		{"min-count at MaxGangMinCount is valid", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "5000")), nil},
		{"min-count above MaxGangMinCount is invalid: no larger gang can be admitted", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "5001")), []want{invalid(minCountField)}},
		{"workload and template together are valid", pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train.v1"), annotation(scheduling.TemplateAnnotation, "workers")), nil},

		{"the group label must not be empty", pod(inGroup("")), []want{required(groupField)}},
		{"the group label must be a DNS subdomain", pod(inGroup("Train_1")), []want{invalid(groupField)}},
		{"the group label must not end with a dot", pod(inGroup("train.")), []want{invalid(groupField)}},

		{"min-count must be a number", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "eight")), []want{invalid(minCountField)}},
		{"min-count must not be empty", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "")), []want{invalid(minCountField)}},
		{"min-count 0 is invalid", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "0")), []want{invalid(minCountField)}},
		{"min-count must be positive", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "-3")), []want{invalid(minCountField)}},
		{"min-count must fit in an int32", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "2147483648")), []want{invalid(minCountField)}},
		{"min-count must be base 10", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "0x8")), []want{invalid(minCountField)}},
		{"min-count must not carry spaces", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, " 8")), []want{invalid(minCountField)}},
		{"min-count must be an integer", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "8.0")), []want{invalid(minCountField)}},

		{"workload must be a DNS subdomain", pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "Train"), annotation(scheduling.TemplateAnnotation, "workers")), []want{invalid(workloadField)}},
		{"workload must not be empty", pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, ""), annotation(scheduling.TemplateAnnotation, "workers")), []want{required(workloadField)}},
		{"template must be a DNS label", pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train"), annotation(scheduling.TemplateAnnotation, "workers.v1")), []want{invalid(templateField)}},
		{"workload needs a template", pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train")), []want{required(templateField)}},
		{"template needs a workload", pod(inGroup("train"), annotation(scheduling.TemplateAnnotation, "workers")), []want{required(workloadField)}},

		{"every error is reported", pod(inGroup("Bad"), annotation(scheduling.MinCountAnnotation, "0"), annotation(scheduling.TemplateAnnotation, "Bad")),
			[]want{invalid(groupField), invalid(minCountField), invalid(templateField), required(workloadField)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, validateCreate(tt.pod), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	managed := label(scheduling.ManagedLabel, "true")
	badMin := annotation(scheduling.MinCountAnnotation, "zero")
	tests := []struct {
		name     string
		old, pod *corev1.Pod
		want     []want
	}{
		{"an update that keeps both labels is valid", pod(inGroup("train"), managed), pod(inGroup("train"), managed, label("app", "x")), nil},
		{"removing the finalizer is valid", pod(inGroup("train"), managed, withFinalizers(scheduling.TrackingFinalizer)), pod(inGroup("train"), managed), nil},
		{"a pod without Muster's labels may change freely", pod(label("app", "x")), pod(label("app", "y")), nil},

		{"the group label cannot change", pod(inGroup("train"), managed), pod(inGroup("other"), managed), []want{invalid(groupField)}},
		{"the group label cannot be removed", pod(inGroup("train"), managed), pod(managed), []want{forbidden(groupField)}},
		{"the group label cannot be added to an existing pod", pod(), pod(inGroup("train")), []want{forbidden(groupField)}},
		{"an invalid group label added on update is reported twice", pod(), pod(inGroup("Bad")), []want{forbidden(groupField), invalid(groupField)}},
		{"the managed label cannot change", pod(inGroup("train"), managed), pod(inGroup("train"), label(scheduling.ManagedLabel, "false")), []want{invalid(managedField)}},
		{"the managed label cannot be removed", pod(inGroup("train"), managed), pod(inGroup("train")), []want{forbidden(managedField)}},
		{"the managed label cannot be added to an existing pod", pod(inGroup("train")), pod(inGroup("train"), managed), []want{forbidden(managedField)}},

		{"a new min-count is checked", pod(inGroup("train")), pod(inGroup("train"), badMin), []want{invalid(minCountField)}},
		{"a changed min-count is checked", pod(inGroup("train"), annotation(scheduling.MinCountAnnotation, "4")), pod(inGroup("train"), badMin), []want{invalid(minCountField)}},
		{"an unchanged invalid min-count does not block the update", pod(inGroup("train"), badMin), pod(inGroup("train"), badMin, withFinalizers()), nil},
		{"an unchanged invalid group label does not block the update", pod(inGroup("Bad")), pod(inGroup("Bad"), label("app", "x")), nil},
		{"a lone workload added on update is checked", pod(inGroup("train")), pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train")), []want{required(templateField)}},
		{"an unchanged lone workload does not block the update", pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train")), pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train"), label("app", "x")), nil},
		{"removing the template of a pair is checked", pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train"), annotation(scheduling.TemplateAnnotation, "workers")), pod(inGroup("train"), annotation(scheduling.WorkloadAnnotation, "train")), []want{required(templateField)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, validateUpdate(tt.pod, tt.old), tt.want...)
		})
	}
}
