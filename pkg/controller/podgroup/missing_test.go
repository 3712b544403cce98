package podgroup

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestSyncMissingGroup(t *testing.T) {
	minCount := func(v string) podMod { return annotated(scheduling.MinCountAnnotation, v) }
	workload := func(w, tpl string) podMod {
		return annotated(scheduling.WorkloadAnnotation, w, scheduling.TemplateAnnotation, tpl)
	}
	createReject := func(err error) func(h *harness) {
		return func(h *harness) {
			h.muster.PrependReactor("create", "podgroups", func(k8sAction) (bool, runtime.Object, error) { return true, nil, err })
		}
	}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: scheduling.GroupName, Kind: "PodGroup"}, testGroup,
		field.ErrorList{field.NotFound(field.NewPath("spec", "workloadRef", "workloadName"), "train")})
	const waiting = "Normal WaitingForPodGroup waiting for PodGroup pg"

	cases := []struct {
		name    string
		objs    []runtime.Object
		setup   func(h *harness)
		wantErr bool
		// want is the PodGroup created, if any, from the pod named from.
		want   *v1alpha1.PodGroup
		from   string
		events []string
		check  func(t *testing.T, h *harness)
	}{{
		name: "a pod with the min-count annotation makes the controller create its PodGroup with gang.minCount",
		objs: objects(nil, newPod("p-0", minCount("3")), newPod("p-1", minCount("3"), createdAt(t0))),
		from: "p-0",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 3},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name: "a group created from a Job's pods names the Job as its owner, so the garbage collector deletes it with the Job; the Job does not control it",
		objs: objects(nil, newPod("p-0", minCount("2"), ofJob("train"))),
		from: "p-0",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
		check: func(t *testing.T, h *harness) {
			want := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: newJob("train").UID}}
			if got := h.created().OwnerReferences; !reflect.DeepEqual(got, want) {
				t.Errorf("owner references = %+v, want %+v", got, want)
			}
		},
	}, {
		name: "a group created from a StatefulSet's pods is owned by the StatefulSet; from plain pods, by nobody",
		objs: objects(nil, newPod("web-0", minCount("2"), ofStatefulSet("web"))),
		from: "web-0",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
		check: func(t *testing.T, h *harness) {
			if got := h.created().OwnerReferences; len(got) != 1 || got[0].Kind != "StatefulSet" || got[0].Name != "web" || got[0].Controller != nil {
				t.Errorf("owner references = %+v, want the StatefulSet web, not as controller", got)
			}
			if refs := createdGroupOwners(newPod("plain")); refs != nil {
				t.Errorf("a plain pod's group owners = %+v, want none", refs)
			}
		},
	}, {
		name:  "a pod named by its instance, with no min-count, is sized by its Job's parallelism, and the Job owns the group",
		objs:  append(objects(nil, newPod("p-0", byInstanceMod, ofJob("train"))), sizedJob("train", 3, nil)),
		from:  "p-0",
		setup: func(h *harness) { h.c.owners = trackerReader{h} },
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 3},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg of 3 pods, the size of Job train"},
		check: func(t *testing.T, h *harness) {
			got := h.created()
			want := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: newJob("train").UID}}
			if !reflect.DeepEqual(got.OwnerReferences, want) {
				t.Errorf("owner references = %+v, want %+v", got.OwnerReferences, want)
			}
			if by := got.Annotations[scheduling.SizedByAnnotation]; by != "Job train" {
				t.Errorf("%s = %q, want %q", scheduling.SizedByAnnotation, by, "Job train")
			}
		},
	}, {
		name: "a min-count annotation sizes a group named by its instance, and the instance's top owner owns it beside the Job",
		objs: append(objects(nil, newPod("p-0", byInstanceMod, minCount("5"), ofJob("train-workers-0"))),
			sizedJob("train-workers-0", 2, &metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "uid-js", Controller: ptr.To(true)})),
		from:  "p-0",
		setup: func(h *harness) { h.c.owners = trackerReader{h} },
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 5},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
		check: func(t *testing.T, h *harness) {
			want := []metav1.OwnerReference{
				{APIVersion: "batch/v1", Kind: "Job", Name: "train-workers-0", UID: newJob("train-workers-0").UID},
				{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "uid-js"},
			}
			if got := h.created().OwnerReferences; !reflect.DeepEqual(got, want) {
				t.Errorf("owner references = %+v, want %+v", got, want)
			}
		},
	}, {
		name:   "a pod named by its instance whose owners say no size creates nothing and is told to set min-count",
		objs:   objects(nil, newPod("p-0", byInstanceMod)),
		setup:  func(h *harness) { h.c.owners = trackerReader{h} },
		events: []string{"Warning InvalidAnnotation cannot create PodGroup pg: no owner of this pod says how many pods its instance runs; set the annotation scheduling.muster.dev/min-count"},
	}, {
		name:    "a failed read of the instance's owner is retried, and creates nothing",
		objs:    append(objects(nil, newPod("p-0", byInstanceMod, ofJob("train"))), sizedJob("train", 3, nil)),
		setup:   func(h *harness) { h.c.owners = failingReader{} },
		wantErr: true,
	}, {
		name: "the oldest pod with creation annotations decides the PodGroup",
		objs: objects(nil, newPod("young", minCount("5"), createdAt(t0)), newPod("old", minCount("2"), createdAt(t0.Add(-time.Minute))),
			newPod("older-plain", createdAt(t0.Add(-time.Hour)))),
		from: "old",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name: "pods created in the same instant are ordered by name",
		objs: objects(nil, newPod("b", minCount("5"), createdAt(t0)), newPod("a", minCount("2"), createdAt(t0))),
		from: "a",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name: "workload and template annotations make a PodGroup with a workloadRef",
		objs: objects(nil, newPod("p-0", workload("train", "workers"))),
		from: "p-0",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{
			WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "train", TemplateName: "workers"},
		}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name: "min-count with a workloadRef sets both",
		objs: objects(nil, newPod("p-0", workload("train", "workers"), minCount("4"))),
		from: "p-0",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{
			WorkloadRef:      &v1alpha1.WorkloadReference{WorkloadName: "train", TemplateName: "workers"},
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 4}},
		}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name:   "pods without creation annotations wait for their PodGroup, each told once",
		objs:   objects(nil, newPod("p-0"), newPod("p-1")),
		events: []string{waiting, waiting},
		check: func(t *testing.T, h *harness) {
			h.step(time.Minute)
			wantEvents(t, h.events())
			if got := h.mutations(); len(got) != 0 {
				t.Errorf("second sync wrote %v", got)
			}
			if got := h.podPatches(); len(got) != 0 {
				t.Errorf("pods patched: %v", got)
			}
			for _, n := range []string{"p-0", "p-1"} {
				if p := h.pod(n); !slices.Equal(gateNames(p), []string{scheduling.AdmissionGate}) || !scheduling.HasTrackingFinalizer(p) {
					t.Errorf("%s: gates %v, finalizers %v; want it left gated and tracked", n, gateNames(p), p.Finalizers)
				}
			}
		},
	}, {
		name:   "a pod deleted and created again with the same name is told again",
		objs:   objects(nil, newPod("p-0")),
		events: []string{waiting},
		check: func(t *testing.T, h *harness) {
			h.deletePod("p-0")
			h.observe()
			h.addPod(newPod("p-0", func(p *corev1.Pod) { p.UID = "uid-p-0-again" }))
			h.step(time.Second)
			wantEvents(t, h.events(), waiting)
		},
	}, {
		name:   "a deleted pod of a missing group loses its finalizer at once, and is not told to wait",
		objs:   objects(nil, newPod("leaving", running, deletedAt(t0.Add(time.Minute))), newPod("gone-gated", deletedAt(t0.Add(time.Minute))), newPod("p-0")),
		events: []string{waiting},
		check: func(t *testing.T, h *harness) {
			patches := h.podPatches()
			for _, n := range []string{"leaving", "gone-gated"} {
				if want := []string{finalizerPatch(newPod(n), 0)}; !slices.Equal(patches[n], want) {
					t.Errorf("patches of %s = %v, want %v", n, patches[n], want)
				}
				if scheduling.HasTrackingFinalizer(h.pod(n)) {
					t.Errorf("%s keeps its finalizer", n)
				}
			}
			if len(patches["p-0"]) != 0 || !scheduling.HasTrackingFinalizer(h.pod("p-0")) {
				t.Errorf("p-0 was patched: %v", patches["p-0"])
			}
		},
	}, {
		name: "a deleted pod does not decide the PodGroup",
		objs: objects(nil, newPod("leaving", minCount("9"), deletedAt(t0.Add(time.Minute)), createdAt(t0.Add(-time.Hour))),
			newPod("p-0", minCount("2"))),
		from: "p-0",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name: "pods that have all finished do not re-create their group from their annotations",
		objs: objects(nil, newPod("done", minCount("2"), succeeded, noFinalizer), newPod("lost", minCount("2"), failed, noFinalizer)),
	}, {
		name: "released pods that still run do not re-create their deleted group, and are not told to wait",
		objs: objects(nil, newPod("p-0", minCount("2"), running, noFinalizer), newPod("p-1", minCount("2"), running, noFinalizer)),
	}, {
		name: "a gated pod that arrives after the deletion re-creates the group, although older running pods carry other annotations",
		objs: objects(nil, newPod("p-0", minCount("3"), running, noFinalizer, createdAt(t0.Add(-2*time.Hour))),
			newPod("late", minCount("2"), createdAt(t0))),
		from: "late",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}}},
		events: []string{"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name:   "a gated pod without annotations does not re-create the group and is told to wait; the running pods are not",
		objs:   objects(nil, newPod("p-0", minCount("2"), running, noFinalizer), newPod("late")),
		events: []string{waiting},
	}, {
		name:    "a failed finalizer removal on a missing group's pod is retried",
		objs:    objects(nil, newPod("leaving", running, deletedAt(t0.Add(time.Minute)))),
		setup:   func(h *harness) { h.failPatches(apierrors.NewServiceUnavailable("injected"), "leaving") },
		wantErr: true,
	}, {
		name:   "an invalid min-count annotation is reported and creates nothing",
		objs:   objects(nil, newPod("p-0", minCount("0"))),
		events: []string{`Warning InvalidAnnotation annotation scheduling.muster.dev/min-count="0" must be a positive 32-bit integer`, waiting},
	}, {
		name: "a pod with an invalid annotation does not stop a valid one from creating the group",
		objs: objects(nil, newPod("bad", minCount("many"), createdAt(t0.Add(-time.Hour))), newPod("good", minCount("2"))),
		from: "good",
		want: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}}},
		events: []string{`Warning InvalidAnnotation annotation scheduling.muster.dev/min-count="many" must be a positive 32-bit integer`,
			"Normal PodGroupCreated created PodGroup pg"},
	}, {
		name: "a workload without a template is reported and creates nothing",
		objs: objects(nil, newPod("p-0", annotated(scheduling.WorkloadAnnotation, "train"))),
		events: []string{"Warning InvalidAnnotation annotations scheduling.muster.dev/workload and scheduling.muster.dev/template must be set together",
			waiting},
	}, {
		name:  "a PodGroup that already exists (stale cache) is not an error and nobody is told anything",
		objs:  objects(nil, newPod("p-0", minCount("2"))),
		setup: createReject(apierrors.NewAlreadyExists(schema.GroupResource{Group: scheduling.GroupName, Resource: "podgroups"}, testGroup)),
	}, {
		name:   "a PodGroup the server rejects as invalid is reported to the pod once, without a retry",
		objs:   objects(nil, newPod("p-0", workload("missing", "workers"))),
		setup:  createReject(invalid),
		events: []string{"Warning InvalidAnnotation cannot create PodGroup pg: " + invalid.Error()},
		check: func(t *testing.T, h *harness) {
			h.step(time.Minute)
			wantEvents(t, h.events())
		},
	}, {
		name:    "any other create error is returned for a retry",
		objs:    objects(nil, newPod("p-0", minCount("2"))),
		setup:   createReject(errors.New("connection refused")),
		wantErr: true,
	}, {
		name: "no pods and no group: nothing to do",
		check: func(t *testing.T, h *harness) {
			if got := h.mutations(); len(got) != 0 {
				t.Errorf("calls = %v", got)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.objs...)
			if tc.setup != nil {
				tc.setup(h)
			}
			if d := h.syncExpectingErr(tc.wantErr); d != 0 {
				t.Errorf("requeue after %s, want none", d)
			}
			_, err := h.muster.Tracker().Get(podGroupsGVR, testNS, testGroup)
			stored := err == nil
			switch got := h.created(); {
			case tc.want == nil && stored:
				t.Errorf("created PodGroup %+v, want none", got)
			case tc.want != nil && !stored:
				t.Errorf("no PodGroup created, want one")
			case tc.want != nil:
				if got.Name != testGroup || got.Namespace != testNS {
					t.Errorf("created %s/%s, want %s", got.Namespace, got.Name, testKey)
				}
				if from := got.Annotations[scheduling.CreatedFromPodAnnotation]; from != tc.from {
					t.Errorf("created from pod %q, want %q", from, tc.from)
				}
				if !equalSpec(got.Spec, tc.want.Spec) {
					t.Errorf("created spec = %+v, want %+v", got.Spec, tc.want.Spec)
				}
			}
			for name, patches := range h.podPatches() {
				if h.pod(name).DeletionTimestamp == nil {
					t.Errorf("%s, which is not being deleted, was patched: %v", name, patches)
				}
			}
			if !tc.wantErr {
				wantEvents(t, h.events(), tc.events...)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

func TestSpecFromAnnotations(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		want    v1alpha1.PodGroupSpec
		ok      bool
		wantErr bool
	}{
		{name: "no annotations ask for nothing"},
		{name: "unrelated annotations ask for nothing", ann: map[string]string{"example.com/x": "1"}},
		{name: "min-count asks for a gang", ann: map[string]string{scheduling.MinCountAnnotation: "8"}, ok: true,
			want: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 8}}}},
		{name: "min-count of the largest int32 is accepted", ann: map[string]string{scheduling.MinCountAnnotation: "2147483647"}, ok: true,
			want: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2147483647}}}},
		{name: "min-count beyond int32 is rejected", ann: map[string]string{scheduling.MinCountAnnotation: "2147483648"}, wantErr: true},
		{name: "min-count of zero is rejected", ann: map[string]string{scheduling.MinCountAnnotation: "0"}, wantErr: true},
		{name: "a negative min-count is rejected", ann: map[string]string{scheduling.MinCountAnnotation: "-1"}, wantErr: true},
		{name: "a non-numeric min-count is rejected", ann: map[string]string{scheduling.MinCountAnnotation: "eight"}, wantErr: true},
		{name: "workload and template ask for a workloadRef", ok: true,
			ann:  map[string]string{scheduling.WorkloadAnnotation: "w", scheduling.TemplateAnnotation: "t"},
			want: v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "w", TemplateName: "t"}}},
		{name: "a workload without a template is rejected", ann: map[string]string{scheduling.WorkloadAnnotation: "w"}, wantErr: true},
		{name: "a template without a workload is rejected", ann: map[string]string{scheduling.TemplateAnnotation: "t"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := specFromAnnotations(tc.ann)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				if ok {
					t.Errorf("ok with an error")
				}
				return
			}
			if ok != tc.ok || !equalSpec(got, tc.want) {
				t.Errorf("= %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func equalSpec(a, b v1alpha1.PodGroupSpec) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// byInstanceMod names a pod's group after its workload instance.
var byInstanceMod = annotated(scheduling.GroupByAnnotation, scheduling.GroupByInstance)

// sizedJob is newJob with a parallelism, controlled by owner when not nil.
func sizedJob(name string, parallelism int32, owner *metav1.OwnerReference) *batchv1.Job {
	j := newJob(name)
	j.Spec.Parallelism = ptr.To(parallelism)
	if owner != nil {
		j.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return j
}

// trackerReader reads the Jobs of the harness's fake API as the dynamic
// reader would; any other kind is not found.
type trackerReader struct{ h *harness }

func (r trackerReader) Get(_ context.Context, namespace string, ref metav1.OwnerReference) (*unstructured.Unstructured, error) {
	if ref.Kind != "Job" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: ref.Kind}, ref.Name)
	}
	obj, err := r.h.kube.Tracker().Get(jobsGVR, namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetAPIVersion("batch/v1")
	out.SetKind("Job")
	return out, nil
}

// failingReader fails every read, as an API server that does not answer.
type failingReader struct{}

func (failingReader) Get(context.Context, string, metav1.OwnerReference) (*unstructured.Unstructured, error) {
	return nil, apierrors.NewServiceUnavailable("injected")
}
