package podgroup

import (
	"fmt"
	"strconv"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// keepVersions makes a fake clientset keep resourceVersions as the API server
// does: every write stores a new one, and an update that names an older one
// fails with a Conflict. The plain object tracker does neither, so without
// this every informer update would look like a resync, and a write from a
// stale cache would silently win. It returns the source of new versions, for
// writes that go to the tracker directly.
func keepVersions(f *k8stesting.Fake, tracker k8stesting.ObjectTracker) (next func() string) {
	var rv atomic.Int64
	rv.Store(100)
	next = func() string { return strconv.FormatInt(rv.Add(1), 10) }
	// The Fake holds its lock while reactors run, so each get-then-write
	// below is atomic with respect to the client's other calls.
	f.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if m, err := meta.Accessor(a.(k8stesting.CreateAction).GetObject()); err == nil {
			m.SetResourceVersion(next())
		}
		return false, nil, nil
	})
	f.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		stored, err := tracker.Get(a.GetResource(), a.GetNamespace(), m.GetName())
		if err != nil {
			return true, nil, err
		}
		sm, _ := meta.Accessor(stored)
		if m.GetResourceVersion() != "" && m.GetResourceVersion() != sm.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), m.GetName(),
				fmt.Errorf("resourceVersion %s is not the latest, %s", m.GetResourceVersion(), sm.GetResourceVersion()))
		}
		m.SetResourceVersion(next())
		if err := tracker.Update(a.GetResource(), obj, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	f.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		_, obj, err := k8stesting.ObjectReaction(tracker)(a)
		if err != nil {
			return true, nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		m.SetResourceVersion(next())
		if err := tracker.Update(a.GetResource(), obj, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	return next
}

// withVersions gives objects a first resourceVersion, as stored objects have.
func withVersions(objs []runtime.Object) []runtime.Object {
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil && m.GetResourceVersion() == "" {
			m.SetResourceVersion("1")
		}
	}
	return objs
}
