package instance

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeReader serves objects by kind and name, and counts its reads.
type fakeReader struct {
	objects map[string]*unstructured.Unstructured
	errs    map[string]error
	reads   int
}

func (f *fakeReader) Get(_ context.Context, _ string, ref metav1.OwnerReference) (*unstructured.Unstructured, error) {
	f.reads++
	k := ref.Kind + "/" + ref.Name
	if err := f.errs[k]; err != nil {
		return nil, err
	}
	if o, ok := f.objects[k]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: ref.Kind}, ref.Name)
}

// object is an object of apiVersion and kind whose UID is its kind and
// name, controlled by owner (nil for none).
func object(apiVersion, kind, name string, owner *metav1.OwnerReference, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	o.SetName(name)
	o.SetUID(types.UID(kind + "/" + name))
	if owner != nil {
		o.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	return o
}

func ref(apiVersion, kind, name string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(kind + "/" + name), Controller: ptr.To(true)}
}

func TestWalk(t *testing.T) {
	jobSetRef := ref("jobset.x-k8s.io/v1alpha2", "JobSet", "train")
	trainJobRef := ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "train")
	cronRef := ref("batch/v1", "CronJob", "nightly")
	lwsRef := ref("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws")
	leaderSTS := ref("apps/v1", "StatefulSet", "lws")
	leaderPod := ref("v1", "Pod", "lws-0")
	rayJobRef := ref("ray.io/v1", "RayJob", "rj")
	objects := map[string]*unstructured.Unstructured{
		"Job/plain":           object("batch/v1", "Job", "plain", nil, map[string]any{"parallelism": int64(4), "completions": int64(8)}),
		"Job/few":             object("batch/v1", "Job", "few", nil, map[string]any{"parallelism": int64(4), "completions": int64(2)}),
		"Job/one":             object("batch/v1", "Job", "one", nil, map[string]any{}),
		"Job/nightly-1":       object("batch/v1", "Job", "nightly-1", cronRef, map[string]any{"parallelism": int64(3)}),
		"Job/train-workers-0": object("batch/v1", "Job", "train-workers-0", jobSetRef, map[string]any{"parallelism": int64(2)}),
		"JobSet/train": object("jobset.x-k8s.io/v1alpha2", "JobSet", "train", trainJobRef, map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "launcher", "template": map[string]any{"spec": map[string]any{"parallelism": int64(1)}}},
			map[string]any{"name": "workers", "replicas": int64(2), "template": map[string]any{"spec": map[string]any{"parallelism": int64(2), "completions": int64(2)}}},
		}}),
		"TrainJob/train":    object("trainer.kubeflow.org/v1alpha1", "TrainJob", "train", nil, map[string]any{}),
		"StatefulSet/lws-0": object("apps/v1", "StatefulSet", "lws-0", leaderPod, map[string]any{"replicas": int64(3)}),
		// The worker StatefulSet of a leader pod that was recreated: it names
		// the old leader's UID.
		"StatefulSet/lws-0-old": object("apps/v1", "StatefulSet", "lws-0-old", &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "lws-0", UID: "old-leader", Controller: ptr.To(true)}, nil),
		"Pod/lws-0":             object("v1", "Pod", "lws-0", leaderSTS, nil),
		"StatefulSet/lws":       object("apps/v1", "StatefulSet", "lws", lwsRef, map[string]any{}),
		"LeaderWorkerSet/lws": object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws", nil, map[string]any{
			"leaderWorkerTemplate": map[string]any{"size": int64(4)}}),
		"RayCluster/rc": object("ray.io/v1", "RayCluster", "rc", rayJobRef, map[string]any{"workerGroupSpecs": []any{
			map[string]any{"groupName": "small", "replicas": int64(2)},
			map[string]any{"groupName": "tpu", "minReplicas": int64(1), "numOfHosts": int64(4)},
		}}),
		"RayJob/rj": object("ray.io/v1", "RayJob", "rj", nil, map[string]any{}),
		"Job/bad":   object("batch/v1", "Job", "bad", nil, map[string]any{"parallelism": "four"}),
	}
	tests := []struct {
		name      string
		start     *metav1.OwnerReference
		errs      map[string]error
		wantTop   string
		wantSize  int32
		wantBy    string
		wantReads int
		wantErr   bool
		wantGone  bool
	}{
		{"a Job runs its parallelism", ref("batch/v1", "Job", "plain"), nil, "Job/plain", 4, "Job plain", 1, false, false},
		{"a Job runs no more than its completions", ref("batch/v1", "Job", "few"), nil, "Job/few", 2, "Job few", 1, false, false},
		{"a Job with neither runs one pod", ref("batch/v1", "Job", "one"), nil, "Job/one", 1, "Job one", 1, false, false},
		{"a CronJob's Job is the instance, and the CronJob is not read", ref("batch/v1", "Job", "nightly-1"), nil, "Job/nightly-1", 3, "Job nightly-1", 1, false, false},
		{"a TrainJob owns the group, its JobSet sizes it", ref("batch/v1", "Job", "train-workers-0"), nil, "TrainJob/train", 5, "JobSet train", 3, false, false},
		{"a LeaderWorkerSet worker walks up to its LeaderWorkerSet", ref("apps/v1", "StatefulSet", "lws-0"), nil, "LeaderWorkerSet/lws", 4, "LeaderWorkerSet lws", 4, false, false},
		{"a RayJob owns the group, its RayCluster sizes it", ref("ray.io/v1", "RayCluster", "rc"), nil, "RayJob/rj", 7, "RayCluster rc", 2, false, false},
		{"an owner that is gone ends the walk there", ref("batch/v1", "Job", "gone"), nil, "Job/gone", 0, "", 1, false, true},
		{"an owner replaced under its name is gone: a restarted LeaderWorkerSet group's old workers", ref("apps/v1", "StatefulSet", "lws-0-old"), nil, "Pod/lws-0", 0, "", 2, false, true},
		{"an owner Muster may not read ends the walk there", ref("batch/v1", "Job", "train-workers-0"),
			map[string]error{"JobSet/train": apierrors.NewForbidden(schema.GroupResource{Resource: "jobsets"}, "train", errors.New("no"))}, "JobSet/train", 2, "Job train-workers-0", 2, false, false},
		{"a spec of the wrong type sizes nothing", ref("batch/v1", "Job", "bad"), nil, "Job/bad", 0, "", 1, false, false},
		{"a server error is returned, to retry", ref("batch/v1", "Job", "plain"),
			map[string]error{"Job/plain": apierrors.NewServiceUnavailable("down")}, "", 0, "", 1, true, false},
		{"a pod with no controller has no instance", nil, nil, "", 0, "", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakeReader{objects: objects, errs: tt.errs}
			in, err := Walk(context.Background(), r, "ns", tt.start)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Walk error = %v, want error %v", err, tt.wantErr)
			}
			if r.reads != tt.wantReads {
				t.Errorf("Walk read %d owners, want %d", r.reads, tt.wantReads)
			}
			if tt.wantErr {
				return
			}
			top := ""
			if in.Top != nil {
				top = in.Top.Kind + "/" + in.Top.Name
			}
			if top != tt.wantTop || in.Size != tt.wantSize || in.SizedBy != tt.wantBy || in.Gone != tt.wantGone {
				t.Errorf("Walk = top %s, size %d by %q, gone %v; want top %s, size %d by %q, gone %v", top, in.Size, in.SizedBy, in.Gone, tt.wantTop, tt.wantSize, tt.wantBy, tt.wantGone)
			}
		})
	}
}
