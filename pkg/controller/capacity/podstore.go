package capacity

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// UnmanagedPodSelector lists the pods that hold capacity outside Muster:
// without the group label (Muster's own pods are in the controller's
// labelled informer), bound, and not terminal. The server filters, so a pod
// that finishes arrives as a deletion.
func UnmanagedPodSelector(groupLabel string) metav1.ListOptions {
	return metav1.ListOptions{
		LabelSelector: "!" + groupLabel,
		FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
	}
}

// PodStore is the store of the reflector that watches unmanaged pods. It
// keeps no pod objects: each pod becomes a compact holding in the Tracker
// (node and effective requests) as it arrives, which is what bounds the
// memory an informer of every pod in the cluster would take.
type PodStore struct {
	tracker *Tracker
	synced  atomic.Bool
	changed func()
}

var _ cache.ReflectorStore = &PodStore{}

// NewPodStore returns a store that feeds t and calls changed after every
// change, so that waiting gangs are considered again.
func NewPodStore(t *Tracker, changed func()) *PodStore {
	if changed == nil {
		changed = func() {}
	}
	return &PodStore{tracker: t, changed: changed}
}

// Add records a pod.
func (s *PodStore) Add(obj interface{}) error {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("storing %T as a pod", obj)
	}
	s.tracker.SetUnmanagedPod(p)
	s.changed()
	return nil
}

// Update records a pod's new state.
func (s *PodStore) Update(obj interface{}) error { return s.Add(obj) }

// Delete forgets a pod.
func (s *PodStore) Delete(obj interface{}) error {
	switch o := obj.(type) {
	case *corev1.Pod:
		s.tracker.RemoveUnmanagedPod(o.UID)
	case cache.DeletedFinalStateUnknown:
		if p, ok := o.Obj.(*corev1.Pod); ok {
			s.tracker.RemoveUnmanagedPod(p.UID)
		}
	default:
		return fmt.Errorf("deleting %T as a pod", obj)
	}
	s.changed()
	return nil
}

// Replace replaces every holding with the listed pods.
func (s *PodStore) Replace(list []interface{}, _ string) error {
	pods := make([]*corev1.Pod, 0, len(list))
	for _, o := range list {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	s.tracker.ReplaceUnmanagedPods(pods)
	s.synced.Store(true)
	s.changed()
	return nil
}

// Resync does nothing: there is no queue to refill.
func (s *PodStore) Resync() error { return nil }

// HasSynced reports whether the first list has been stored.
func (s *PodStore) HasSynced() bool { return s.synced.Load() }

// NewUnmanagedPodReflector returns a reflector that feeds store with the
// pods UnmanagedPodSelector picks.
func NewUnmanagedPodReflector(kube kubernetes.Interface, groupLabel string, store *PodStore) *cache.Reflector {
	base := UnmanagedPodSelector(groupLabel)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector, o.FieldSelector = base.LabelSelector, base.FieldSelector
			return kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector, o.FieldSelector = base.LabelSelector, base.FieldSelector
			return kube.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	// As client-go's own informers do: a client that cannot stream the
	// initial list (a fake) makes the reflector list instead.
	return cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, kube), &corev1.Pod{}, store,
		cache.ReflectorOptions{Name: "muster-capacity-pods"})
}
