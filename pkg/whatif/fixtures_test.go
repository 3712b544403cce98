package whatif

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// The namespace reviews are asked in.
const ns = "ns"

// fakeLookup serves stored groups, classes and Workloads from memory.
type fakeLookup struct {
	groups    map[string]*v1alpha1.PodGroup
	classes   []*schedulingv1.PriorityClass
	groupErr  error
	classErr  error
	workloads map[string]*v1alpha1.Workload // nil: it reads no Workloads
	wlErr     error
}

func (f *fakeLookup) PodGroup(namespace, name string) (*v1alpha1.PodGroup, error) {
	if f.groupErr != nil {
		return nil, f.groupErr
	}
	return f.groups[namespace+"/"+name], nil
}

func (f *fakeLookup) PriorityClasses() ([]*schedulingv1.PriorityClass, error) {
	return f.classes, f.classErr
}

// workloadLookup is a fakeLookup that reads Workloads too.
type workloadLookup struct{ *fakeLookup }

func (w workloadLookup) Workload(namespace, name string) (*v1alpha1.Workload, error) {
	if w.wlErr != nil {
		return nil, w.wlErr
	}
	return w.workloads[namespace+"/"+name], nil
}

// lookupOf is the Lookup a case's fakeLookup is: one that reads Workloads
// when it has some.
func lookupOf(f *fakeLookup) Lookup {
	if f.workloads != nil {
		return workloadLookup{f}
	}
	return f
}

var errDown = errors.New("the cache is not there")

func class(name string, value int32, global bool, policy corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	c := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: global}
	if policy != "" {
		c.PreemptionPolicy = &policy
	}
	return c
}

// gangGroup is a group of a gang of minCount.
func gangGroup(name string, minCount int32) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}}},
	}
}

// rolesGroup is a gang of the roles, its minCount their sum, as
// validation asks.
func rolesGroup(name string, roles ...v1alpha1.PodGroupRole) *v1alpha1.PodGroup {
	var sum int32
	for _, r := range roles {
		sum += r.Count
	}
	pg := gangGroup(name, sum)
	pg.Spec.Roles = roles
	return pg
}

// role is a role of count pods, each requesting cpu, with a template
// unless cpu is "".
func role(name string, count int32, cpu string) v1alpha1.PodGroupRole {
	r := v1alpha1.PodGroupRole{Name: name, Count: count}
	if cpu != "" {
		r.Template = &v1alpha1.PodGroupRoleTemplate{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	return r
}

// later makes a role createdLater.
func later(r v1alpha1.PodGroupRole) v1alpha1.PodGroupRole {
	r.CreatedLater = true
	return r
}

// raw encodes objects as a review carries them.
func raw(t testing.TB, v any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

// template is a pod template of a gang named by its instance, as the
// examples write one: a placeholder group label and group-by: instance.
func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{scheduling.PodGroupLabel: "placeholder"},
			Annotations: map[string]string{scheduling.GroupByAnnotation: scheduling.GroupByInstance},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}}},
		},
	}
}

// job is a Job of 4 pods grouped by instance, changed by mods.
func job(name string, mods ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](4), Template: template()},
	}
	for _, m := range mods {
		m(j)
	}
	return j
}

func parallelism(n int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To(n) }
}
func completions(n int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.Completions = ptr.To(n) }
}
func indexed(j *batchv1.Job)       { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }
func noParallelism(j *batchv1.Job) { j.Spec.Parallelism = nil }

// inGroup replaces a template's group-by with the fixed group name.
func inGroup(name string) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.Template.Labels[scheduling.PodGroupLabel] = name
		delete(j.Spec.Template.Annotations, scheduling.GroupByAnnotation)
	}
}

func tplAnnotation(k, v string) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.Template.Annotations[k] = v }
}

func tplLabel(k, v string) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.Template.Labels[k] = v }
}

func priorityClass(name string) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.Template.Spec.PriorityClassName = name }
}

// rjob is a replicated job of replicas Jobs of parallelism pods each,
// grouped by instance.
func rjob(name string, replicas, parallelism int32) map[string]any {
	tpl := batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Parallelism: ptr.To(parallelism), Template: template()}}
	b, _ := json.Marshal(tpl)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return map[string]any{"name": name, "replicas": replicas, "template": m}
}

// jobSet is a jobset.x-k8s.io/v1alpha2 JobSet of the replicated jobs.
func jobSet(name string, rjobs ...map[string]any) map[string]any {
	items := make([]any, len(rjobs))
	for i := range rjobs {
		items[i] = rjobs[i]
	}
	return map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicatedJobs": items},
	}
}

// list is a v1 List of the items.
func list(items ...any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

// want is one expected refusal: its type and its exact field path.
type want struct {
	typ   field.ErrorType
	field string
}

func (w want) String() string { return fmt.Sprintf("%s %s", w.field, w.typ) }

// expectErrors fails unless errs holds exactly the wanted errors, by type
// and field path, in any order, and each names its field.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	var got, exp []string
	for _, e := range errs {
		got = append(got, want{e.Type, e.Field}.String())
		if !strings.HasPrefix(e.Error(), e.Field+": ") {
			t.Errorf("message %q does not start with its field %q", e.Error(), e.Field)
		}
	}
	for _, w := range wants {
		exp = append(exp, w.String())
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors differ\nwant:\n  %s\ngot:\n  %s\nfull errors: %v", strings.Join(exp, "\n  "), strings.Join(got, "\n  "), errs)
	}
}
