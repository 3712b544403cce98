package podgroup

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const unmanagedNS = "kube-system"

func namespaceObject(name string, labels ...string) *corev1.Namespace {
	l := map[string]string{corev1.LabelMetadataName: name}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// TestFinalizerReleasedInUnmanagedNamespace: Muster takes its finalizer off
// an ended or deleted pod in a namespace it does not manage, whether the
// group exists or not, and counts nothing there; running pods keep theirs,
// and no group is created from annotations.
func TestFinalizerReleasedInUnmanagedNamespace(t *testing.T) {
	inUnmanaged := func(p *corev1.Pod) { p.Namespace = unmanagedNS }
	tests := []struct {
		name        string
		group       bool
		pods        []*corev1.Pod
		wantRelease []string
	}{
		{
			name:  "group exists: ended and deleted pods are released, a running one is not",
			group: true,
			pods: []*corev1.Pod{
				newPod("done", inUnmanaged, succeeded), newPod("gone", inUnmanaged, running, deletedAt(t0.Add(time.Hour))),
				newPod("busy", inUnmanaged, running),
			},
			wantRelease: []string{"done", "gone"},
		},
		{
			name: "group missing: the same, and annotations create no group",
			pods: []*corev1.Pod{
				newPod("done", inUnmanaged, failed, annotated(scheduling.MinCountAnnotation, "2")),
				newPod("busy", inUnmanaged, running, annotated(scheduling.MinCountAnnotation, "2")),
			},
			wantRelease: []string{"done"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := []any{namespaceObject(unmanagedNS)}
			if tc.group {
				objs = append(objs, newGroup(2, func(pg *v1alpha1.PodGroup) { pg.Namespace = unmanagedNS }))
			}
			h := newHarness(t, nil, objects(nil, tc.pods...)...)
			// The pod handlers queued the group although its namespace is not managed.
			queued := false
			for h.c.queue.Len() > 0 {
				k, _ := h.c.queue.Get()
				queued = queued || k.String() == unmanagedNS+"/"+testGroup
				h.c.queue.Done(k)
			}
			if !queued {
				t.Fatal("the pod handlers did not queue the group of an ended pod in an unmanaged namespace")
			}
			for _, o := range objs {
				switch o := o.(type) {
				case *corev1.Namespace:
					if err := h.kube.Tracker().Add(o); err != nil {
						t.Fatal(err)
					}
				case *v1alpha1.PodGroup:
					if err := h.muster.Tracker().Add(o); err != nil {
						t.Fatal(err)
					}
				}
			}
			h.observe()
			h.reset()
			if _, err := h.c.sync(t.Context(), gk(unmanagedNS+"/"+testGroup)); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.pods {
				o, err := h.kube.Tracker().Get(podsGVR, unmanagedNS, p.Name)
				if err != nil {
					t.Fatal(err)
				}
				released := !scheduling.HasTrackingFinalizer(o.(*corev1.Pod))
				want := false
				for _, n := range tc.wantRelease {
					want = want || n == p.Name
				}
				if released != want {
					t.Errorf("pod %s: finalizer released = %v, want %v", p.Name, released, want)
				}
			}
			for _, m := range h.mutations() {
				if m != "patch pods "+"done" && m != "patch pods gone" {
					t.Errorf("unexpected write %q: Muster keeps no counts and creates no group in a namespace it does not manage", m)
				}
			}
		})
	}
}

// TestRelabelledNamespaceRequeuesItsGroups: a namespace whose labels change
// may have come under the selector or left it, so its groups sync again.
func TestRelabelledNamespaceRequeuesItsGroups(t *testing.T) {
	h := newHarness(t, nil, objects(newGroup(2), newPod("p-0"))...)
	for h.c.queue.Len() > 0 {
		k, _ := h.c.queue.Get()
		h.c.queue.Done(k)
	}
	old := namespaceObject(testNS)
	relabelled := namespaceObject(testNS, "team", "a")
	h.c.namespaceChanged(old, old.DeepCopy())
	if n := h.c.queue.Len(); n != 0 {
		t.Fatalf("an update with the same labels queued %d groups, want 0", n)
	}
	h.c.namespaceChanged(old, relabelled)
	if n := h.c.queue.Len(); n != 1 {
		t.Fatalf("queued %d groups, want the namespace's 1", n)
	}
	if k, _ := h.c.queue.Get(); k != testKey {
		t.Errorf("queued %q, want %q", k, testKey)
	}
}

// TestSideEffectsOnlyAfterTheirWrite: the Admitted event, like every event
// and the accounting metric that records a decision, is emitted only once
// the status write holding the decision succeeds, so a conflict that makes
// the sync run again does not repeat it.
func TestSideEffectsOnlyAfterTheirWrite(t *testing.T) {
	h := newHarness(t, nil, objects(newGroup(2), pods("p", 2)...)...)
	failed := false
	h.muster.PrependReactor("update", "podgroups", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && !failed {
			failed = true
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "scheduling.muster.dev", Resource: "podgroups"}, testGroup, errors.New("stale"))
		}
		return false, nil, nil
	})
	if _, err := h.c.sync(t.Context(), testKey); err == nil {
		t.Fatal("sync succeeded although its status write conflicted")
	}
	if ev := h.events(); len(ev) != 0 {
		t.Fatalf("events %v after a failed write, want none", ev)
	}
	h.sync()
	admitted := 0
	for _, e := range h.events() {
		if strings.HasPrefix(e, "Normal Admitted") {
			admitted++
		}
	}
	if admitted != 1 {
		t.Errorf("%d Admitted events, want exactly 1", admitted)
	}
}
