package pods

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
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
	requiredField = "metadata.annotations[scheduling.muster.dev/topology-required]"
	preferField   = "metadata.annotations[scheduling.muster.dev/topology-preferred]"
	sliceKeyField = "metadata.annotations[scheduling.muster.dev/topology-slice-key]"
	sliceField    = "metadata.annotations[scheduling.muster.dev/topology-slice-size]"
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
		{"a pod without Muster's labels is valid", podtest.Pod(podtest.Label("app", "x")), nil},
		{"a pod with no labels or annotations is valid", podtest.Pod(), nil},
		{"a group name is valid", podtest.Pod(podtest.InGroup("train")), nil},
		{"a dotted group name is a valid DNS subdomain", podtest.Pod(podtest.InGroup("train.v1")), nil},
		{"min-count 1 is valid", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "1")), nil},
		{"min-count at MaxGangMinCount is valid", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "5000")), nil},
		{"min-count above MaxGangMinCount is invalid: no larger gang can be admitted", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "5001")), []want{invalid(minCountField)}},
		{"workload and template together are valid", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train.v1"), podtest.Annotation(scheduling.TemplateAnnotation, "workers")), nil},

		{"the group label must not be empty", podtest.Pod(podtest.InGroup("")), []want{required(groupField)}},
		{"the group label must be a DNS subdomain", podtest.Pod(podtest.InGroup("Train_1")), []want{invalid(groupField)}},
		{"the group label must not end with a dot", podtest.Pod(podtest.InGroup("train.")), []want{invalid(groupField)}},

		{"min-count must be a number", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "eight")), []want{invalid(minCountField)}},
		{"min-count must not be empty", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "")), []want{invalid(minCountField)}},
		{"min-count 0 is invalid", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "0")), []want{invalid(minCountField)}},
		{"min-count must be positive", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "-3")), []want{invalid(minCountField)}},
		{"min-count must fit in an int32", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "2147483648")), []want{invalid(minCountField)}},
		{"min-count must be base 10", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "0x8")), []want{invalid(minCountField)}},
		{"min-count must not carry spaces", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, " 8")), []want{invalid(minCountField)}},
		{"min-count must be an integer", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "8.0")), []want{invalid(minCountField)}},

		{"workload must be a DNS subdomain", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "Train"), podtest.Annotation(scheduling.TemplateAnnotation, "workers")), []want{invalid(workloadField)}},
		{"workload must not be empty", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, ""), podtest.Annotation(scheduling.TemplateAnnotation, "workers")), []want{required(workloadField)}},
		{"template must be a DNS label", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train"), podtest.Annotation(scheduling.TemplateAnnotation, "workers.v1")), []want{invalid(templateField)}},
		{"workload needs a template", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train")), []want{required(templateField)}},
		{"template needs a workload", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TemplateAnnotation, "workers")), []want{required(workloadField)}},

		{"topology annotations are valid", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "topology.kubernetes.io/zone"),
			podtest.Annotation(scheduling.TopologyPreferredAnnotation, "kubernetes.io/hostname, example.com/rack"),
			podtest.Annotation(scheduling.TopologySliceKeyAnnotation, "example.com/rack"), podtest.Annotation(scheduling.TopologySliceSizeAnnotation, "4")), nil},
		{"the required level must be a label key", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "a zone")), []want{invalid(requiredField)}},
		{"the required level must not be empty", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "")), []want{required(requiredField)}},
		{"at most 4 preferred levels", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyPreferredAnnotation, "a,b,c,d,e")), []want{{field.ErrorTypeTooMany, preferField}}},
		{"preferred levels are unique", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyPreferredAnnotation, "a,a")), []want{{field.ErrorTypeDuplicate, preferField}}},
		{"a preferred level is not the required one", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "a"), podtest.Annotation(scheduling.TopologyPreferredAnnotation, "a")), []want{invalid(preferField)}},
		{"a slice's key needs its size", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologySliceKeyAnnotation, "example.com/rack")), []want{required(sliceField)}},
		{"a slice's size needs its key", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologySliceSizeAnnotation, "4")), []want{required(sliceKeyField)}},
		{"a slice's key is not the required one", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "a"),
			podtest.Annotation(scheduling.TopologySliceKeyAnnotation, "a"), podtest.Annotation(scheduling.TopologySliceSizeAnnotation, "4")), []want{invalid(sliceKeyField)}},
		{"a slice's size is at most MaxPlacements", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologySliceKeyAnnotation, "a"), podtest.Annotation(scheduling.TopologySliceSizeAnnotation, "5001")), []want{invalid(sliceField)}},
		{"a slice's size must be a number", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologySliceKeyAnnotation, "a"), podtest.Annotation(scheduling.TopologySliceSizeAnnotation, "four")), []want{invalid(sliceField)}},

		{"every error is reported", podtest.Pod(podtest.InGroup("Bad"), podtest.Annotation(scheduling.MinCountAnnotation, "0"), podtest.Annotation(scheduling.TemplateAnnotation, "Bad")),
			[]want{invalid(groupField), invalid(minCountField), invalid(templateField), required(workloadField)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, validateCreate(tt.pod), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	managed := podtest.Label(scheduling.ManagedLabel, "true")
	badMin := podtest.Annotation(scheduling.MinCountAnnotation, "zero")
	tests := []struct {
		name     string
		old, pod *corev1.Pod
		want     []want
	}{
		{"an update that keeps both labels is valid", podtest.Pod(podtest.InGroup("train"), managed), podtest.Pod(podtest.InGroup("train"), managed, podtest.Label("app", "x")), nil},
		{"removing the finalizer is valid", podtest.Pod(podtest.InGroup("train"), managed, podtest.WithFinalizers(scheduling.TrackingFinalizer)), podtest.Pod(podtest.InGroup("train"), managed), nil},
		{"a pod without Muster's labels may change freely", podtest.Pod(podtest.Label("app", "x")), podtest.Pod(podtest.Label("app", "y")), nil},

		{"the group label cannot change", podtest.Pod(podtest.InGroup("train"), managed), podtest.Pod(podtest.InGroup("other"), managed), []want{invalid(groupField)}},
		{"the group label cannot be removed", podtest.Pod(podtest.InGroup("train"), managed), podtest.Pod(managed), []want{forbidden(groupField)}},
		{"the group label cannot be added to an existing pod", podtest.Pod(), podtest.Pod(podtest.InGroup("train")), []want{forbidden(groupField)}},
		{"an invalid group label added on update is reported twice", podtest.Pod(), podtest.Pod(podtest.InGroup("Bad")), []want{forbidden(groupField), invalid(groupField)}},
		{"the managed label cannot change", podtest.Pod(podtest.InGroup("train"), managed), podtest.Pod(podtest.InGroup("train"), podtest.Label(scheduling.ManagedLabel, "false")), []want{invalid(managedField)}},
		{"the managed label cannot be removed", podtest.Pod(podtest.InGroup("train"), managed), podtest.Pod(podtest.InGroup("train")), []want{forbidden(managedField)}},
		{"the managed label cannot be added to an existing pod", podtest.Pod(podtest.InGroup("train")), podtest.Pod(podtest.InGroup("train"), managed), []want{forbidden(managedField)}},

		{"a new min-count is checked", podtest.Pod(podtest.InGroup("train")), podtest.Pod(podtest.InGroup("train"), badMin), []want{invalid(minCountField)}},
		{"a changed min-count is checked", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.MinCountAnnotation, "4")), podtest.Pod(podtest.InGroup("train"), badMin), []want{invalid(minCountField)}},
		{"an unchanged invalid min-count does not block the update", podtest.Pod(podtest.InGroup("train"), badMin), podtest.Pod(podtest.InGroup("train"), badMin, podtest.WithFinalizers()), nil},
		{"an unchanged invalid group label does not block the update", podtest.Pod(podtest.InGroup("Bad")), podtest.Pod(podtest.InGroup("Bad"), podtest.Label("app", "x")), nil},
		{"a lone workload added on update is checked", podtest.Pod(podtest.InGroup("train")), podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train")), []want{required(templateField)}},
		{"an unchanged lone workload does not block the update", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train")), podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train"), podtest.Label("app", "x")), nil},
		{"a new topology annotation is checked", podtest.Pod(podtest.InGroup("train")), podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "a zone")), []want{invalid(requiredField)}},
		{"removing half of a slice is checked", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologySliceKeyAnnotation, "a"), podtest.Annotation(scheduling.TopologySliceSizeAnnotation, "2")),
			podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologySliceKeyAnnotation, "a")), []want{required(sliceField)}},
		{"an unchanged invalid topology annotation does not block the update", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "a zone")),
			podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.TopologyRequiredAnnotation, "a zone"), podtest.Label("app", "x")), nil},
		{"removing the template of a pair is checked", podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train"), podtest.Annotation(scheduling.TemplateAnnotation, "workers")), podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.WorkloadAnnotation, "train")), []want{required(templateField)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, validateUpdate(tt.pod, tt.old), tt.want...)
		})
	}
}
