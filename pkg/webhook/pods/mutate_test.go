package pods

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	evanjsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/jsonpatch"
)

// prepared is what the webhook leaves on a pod of a gang.
type prepared struct {
	Labels     map[string]string
	Finalizers []string
	Gates      []string
}

func preparedOf(p *corev1.Pod) prepared {
	var gates []string
	for _, g := range p.Spec.SchedulingGates {
		gates = append(gates, g.Name)
	}
	return prepared{Labels: p.Labels, Finalizers: p.Finalizers, Gates: gates}
}

func TestMutate(t *testing.T) {
	const group, gate, fin, managed = scheduling.PodGroupLabel, scheduling.AdmissionGate, scheduling.TrackingFinalizer, scheduling.ManagedLabel
	tests := []struct {
		name      string
		pod       *corev1.Pod
		want      prepared // after the patch
		wantOps   int
		wantWarn  string
		wantPaths []string // when set, the exact paths of the patch
		// wantErr, when set, is the field the refusal names; the pod gets no patch.
		wantErr string
	}{
		{
			name: "a pod without the group label gets no patch",
			pod:  podtest.Pod(podtest.Label("app", "x"), podtest.WithFinalizers("keep")),
			want: prepared{Labels: map[string]string{"app": "x"}, Finalizers: []string{"keep"}},
		},
		{
			name: "a pod with no labels at all gets no patch",
			pod:  podtest.Pod(),
			want: prepared{},
		},
		{
			name: "a pod with an empty group label gets no patch",
			pod:  podtest.Pod(podtest.InGroup("")),
			want: prepared{Labels: map[string]string{group: ""}},
		},
		{
			name:      "a pod of a group gets the gate, the finalizer and the managed label",
			pod:       podtest.Pod(podtest.InGroup("train")),
			want:      prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
			wantOps:   3,
			wantPaths: []string{"/spec/schedulingGates", "/metadata/finalizers", "/metadata/labels/scheduling.muster.dev~1managed"},
		},
		{
			name:      "other gates and finalizers are kept, in order, and ours appended",
			pod:       podtest.Pod(podtest.InGroup("train"), podtest.WithGates("b.example.com/two", "a.example.com/one"), podtest.WithFinalizers("example.com/keep")),
			want:      prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{"example.com/keep", fin}, Gates: []string{"b.example.com/two", "a.example.com/one", gate}},
			wantOps:   3,
			wantPaths: []string{"/spec/schedulingGates/-", "/metadata/finalizers/-", "/metadata/labels/scheduling.muster.dev~1managed"},
		},
		{
			name:    "a gate already present is not added twice",
			pod:     podtest.Pod(podtest.InGroup("train"), podtest.WithGates("x.example.com/first", gate)),
			want:    prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{fin}, Gates: []string{"x.example.com/first", gate}},
			wantOps: 2,
		},
		{
			name:    "a finalizer already present is not added twice",
			pod:     podtest.Pod(podtest.InGroup("train"), podtest.WithFinalizers(fin)),
			want:    prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
			wantOps: 2,
		},
		{
			name: "a pod created fully prepared, as a Job-like controller would, gets no patch",
			pod:  podtest.Pod(podtest.InGroup("train"), podtest.Label(managed, "true"), podtest.WithGates(gate), podtest.WithFinalizers(fin)),
			want: prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
		},
		{
			name:    "a managed label with another value is set to true",
			pod:     podtest.Pod(podtest.InGroup("train"), podtest.Label(managed, "no"), podtest.WithGates(gate), podtest.WithFinalizers(fin)),
			want:    prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
			wantOps: 1,
		},
		{
			name:    "empty, non-nil lists are replaced by one-item lists",
			pod:     podtest.Pod(podtest.InGroup("train"), podtest.WithGates(), podtest.WithFinalizers()),
			want:    prepared{Labels: map[string]string{group: "train", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
			wantOps: 3,
		},
		{
			name:     "a pod bound to a node at creation is left unchanged, with a warning",
			pod:      podtest.Pod(podtest.InGroup("train"), podtest.OnNode("node-1")),
			want:     prepared{Labels: map[string]string{group: "train"}},
			wantWarn: `spec.nodeName "node-1"`,
		},
		{
			name: "a Job's pod grouped by instance is named after its Job",
			pod: podtest.Pod(podtest.InGroup("trainer-job"), podtest.Label(jobNameLabel, "trainer-job-2"),
				podtest.Annotation(scheduling.GroupByAnnotation, scheduling.GroupByInstance)),
			want:      prepared{Labels: map[string]string{group: "trainer-job-2", jobNameLabel: "trainer-job-2", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
			wantOps:   4,
			wantPaths: []string{"/metadata/labels/scheduling.muster.dev~1pod-group", "/spec/schedulingGates", "/metadata/finalizers", "/metadata/labels/scheduling.muster.dev~1managed"},
		},
		{
			name: "an empty group label is a placeholder for the instance's name",
			pod: podtest.Pod(podtest.InGroup(""), podtest.Label("example.com/run", "nightly"),
				podtest.Annotation(scheduling.GroupByAnnotation, "example.com/run")),
			want:    prepared{Labels: map[string]string{group: "nightly", "example.com/run": "nightly", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
			wantOps: 4,
		},
		{
			name: "a label that already names the instance is left alone",
			pod: podtest.Pod(podtest.InGroup("trainer-job-2"), podtest.Label(jobNameLabel, "trainer-job-2"),
				podtest.Annotation(scheduling.GroupByAnnotation, scheduling.GroupByInstance)),
			want:    prepared{Labels: map[string]string{group: "trainer-job-2", jobNameLabel: "trainer-job-2", managed: "true"}, Finalizers: []string{fin}, Gates: []string{gate}},
			wantOps: 3,
		},
		{
			name:    "a pod grouped by labels it lacks is refused, naming the labels",
			pod:     podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.GroupByAnnotation, "example.com/run")),
			want:    prepared{Labels: map[string]string{group: "train"}},
			wantErr: "metadata.labels",
		},
		{
			name:    "a group-by that is not a label key is refused, naming the annotation",
			pod:     podtest.Pod(podtest.InGroup("train"), podtest.Annotation(scheduling.GroupByAnnotation, "no such key!")),
			want:    prepared{Labels: map[string]string{group: "train"}},
			wantErr: "metadata.annotations[scheduling.muster.dev/group-by]",
		},
		{
			name: "the group-by annotation on a pod without the group label does nothing",
			pod:  podtest.Pod(podtest.Label(jobNameLabel, "j"), podtest.Annotation(scheduling.GroupByAnnotation, scheduling.GroupByInstance)),
			want: prepared{Labels: map[string]string{jobNameLabel: "j"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, warnings, errs := mutate(tt.pod.DeepCopy())
			switch {
			case tt.wantErr == "" && len(errs) > 0:
				t.Errorf("unexpected refusal: %v", errs)
			case tt.wantErr != "" && (len(errs) != 1 || errs[0].Field != tt.wantErr):
				t.Errorf("refusal = %v, want one naming %s", errs, tt.wantErr)
			}
			if len(ops) != tt.wantOps {
				t.Errorf("got %d ops, want %d: %+v", len(ops), tt.wantOps, ops)
			}
			if tt.wantPaths != nil {
				var paths []string
				for _, op := range ops {
					if op.Op != "add" {
						t.Errorf("op %+v is not an add", op)
					}
					paths = append(paths, op.Path)
				}
				if !reflect.DeepEqual(paths, tt.wantPaths) {
					t.Errorf("paths = %q, want %q", paths, tt.wantPaths)
				}
			}
			switch {
			case tt.wantWarn == "" && len(warnings) > 0:
				t.Errorf("unexpected warnings %q", warnings)
			case tt.wantWarn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tt.wantWarn)):
				t.Errorf("warnings = %q, want one containing %q", warnings, tt.wantWarn)
			}
			got := preparedOf(applyOps(t, tt.pod, ops))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("after the patch:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// jobNameLabel is the label the Job controller puts on its pods.
const jobNameLabel = "batch.kubernetes.io/job-name"

// applyOps applies ops to the pod's JSON with the library kube-apiserver uses
// for webhook patches, so that the test proves what the server will do.
func applyOps(t *testing.T, p *corev1.Pod, ops []jsonpatch.Op) *corev1.Pod {
	t.Helper()
	if len(ops) == 0 {
		return p
	}
	return applyPatch(t, p, mustJSON(t, ops))
}

func applyPatch(t *testing.T, p *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	decoded, err := evanjsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decoding patch %s: %v", patch, err)
	}
	doc, err := decoded.Apply(mustJSON(t, p))
	if err != nil {
		t.Fatalf("applying patch %s: %v", patch, err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(doc, out); err != nil {
		t.Fatalf("decoding patched pod: %v", err)
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPatchOpsOnAbsentFields(t *testing.T) {
	p := podtest.Pod() // no labels, finalizers or gates: all absent from its JSON
	ops := []jsonpatch.Op{
		jsonpatch.SetKey("/metadata/labels", p.Labels, scheduling.ManagedLabel, "true"),
		jsonpatch.Append("/metadata/finalizers", len(p.Finalizers), scheduling.TrackingFinalizer),
		jsonpatch.Append("/spec/schedulingGates", len(p.Spec.SchedulingGates), corev1.PodSchedulingGate{Name: scheduling.AdmissionGate}),
	}
	got := preparedOf(applyOps(t, p, ops))
	want := prepared{
		Labels:     map[string]string{scheduling.ManagedLabel: "true"},
		Finalizers: []string{scheduling.TrackingFinalizer},
		Gates:      []string{scheduling.AdmissionGate},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
