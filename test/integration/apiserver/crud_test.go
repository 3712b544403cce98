package apiserver

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/integration/framework"
)

// TestPodGroupLifecycle drives create, get, list, watch, update, patch and
// delete through the typed clientset. The framework runs the server
// standalone, with no controller, so a group gets no pod-cleanup finalizer
// and is deleted at once.
func TestPodGroupLifecycle(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	pgs := s.Client.SchedulingV1alpha1().PodGroups(ns)

	w, err := pgs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := pgs.Create(ctx, gangGroup("train", 4), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Generation != 1 {
		t.Errorf("generation after create = %d, want 1", created.Generation)
	}
	if got := created.Finalizers; len(got) != 0 {
		t.Errorf("finalizers after create = %v, want none: standalone runs no controller to remove scheduling.muster.dev/pod-cleanup", got)
	}
	if created.Status.Phase != v1alpha1.PodGroupPending {
		t.Errorf("phase after create = %q, want Pending", created.Status.Phase)
	}
	expectEvent(t, w, watch.Added, "train")

	got, err := pgs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v (uid %v, want %v)", err, got.UID, created.UID)
	}
	list, err := pgs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %d items, want 1", err, len(list.Items))
	}

	got.Labels = map[string]string{"team": "ml"}
	updated, err := pgs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Generation != 1 {
		t.Errorf("generation after a label-only update = %d, want 1", updated.Generation)
	}
	expectEvent(t, w, watch.Modified, "train")

	patched, err := pgs.Patch(ctx, "train", types.MergePatchType, []byte(`{"spec":{"schedulingPolicy":{"gang":{"minCount":6}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	if patched.Spec.SchedulingPolicy.Gang.MinCount != 6 || patched.Generation != 2 {
		t.Errorf("after patch minCount=%d generation=%d, want 6 and 2", patched.Spec.SchedulingPolicy.Gang.MinCount, patched.Generation)
	}
	expectEvent(t, w, watch.Modified, "train")

	if err := pgs.Delete(ctx, "train", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := pgs.Get(ctx, "train", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound: nothing may hold a group that no controller releases", err)
	}
	expectEvent(t, w, watch.Deleted, "train")

	// A finalizer of the user's own still holds the group until removed.
	held := gangGroup("held", 2)
	held.Finalizers = []string{"example.com/hold"}
	if _, err := pgs.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	expectEvent(t, w, watch.Added, "held")
	if err := pgs.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	terminating, err := pgs.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || terminating.DeletionTimestamp == nil {
		t.Fatalf("after delete: err=%v deletionTimestamp=%v, want the group kept with a deletionTimestamp", err, terminating.DeletionTimestamp)
	}
	if _, err := pgs.Patch(ctx, "held", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing finalizer: %v", err)
	}
	if _, err := pgs.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after finalizer removal: %v, want NotFound", err)
	}
	expectEvent(t, w, watch.Modified, "held") // deletionTimestamp set
	expectEvent(t, w, watch.Deleted, "held")  // last finalizer removed
}

// TestWorkloadLifecycle covers the Workload kind's CRUD and its immutable template set.
func TestWorkloadLifecycle(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	wls := s.Client.SchedulingV1alpha1().Workloads(ns)

	created, err := wls.Create(ctx, workload("job", gangTemplate("workers", 4, nil)), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	created.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 8
	updated, err := wls.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("changing a template's minCount: %v", err)
	}
	if updated.Generation != 2 {
		t.Errorf("generation after spec change = %d, want 2", updated.Generation)
	}
	updated.Spec.PodGroupTemplates = append(updated.Spec.PodGroupTemplates, gangTemplate("ps", 1, nil))
	_, err = wls.Update(ctx, updated, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.podGroupTemplates[1]")

	list, err := wls.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}
	if err := wls.Delete(ctx, "job", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := wls.Get(ctx, "job", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound", err)
	}
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed, want %s %s", typ, name)
		}
		pg, isPG := ev.Object.(*v1alpha1.PodGroup)
		if ev.Type != typ || !isPG || pg.Name != name {
			t.Fatalf("watch event %s %T, want %s of PodGroup %s", ev.Type, ev.Object, typ, name)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no watch event, want %s %s", typ, name)
	}
}

// expectInvalid asserts a 422 whose causes name the field.
func expectInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error = %v, want 422 Invalid on %s", err, field)
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		t.Fatalf("error %v carries no details", err)
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field {
			return
		}
	}
	t.Fatalf("error %v does not name field %s", err, field)
}
