package podgroup

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// writtenGroups remembers, per group, the PodGroup that the controller's
// last status write returned, and the resourceVersions it replaced. A sync
// that runs before the informer has caught up with that write (a pod event
// right after it) starts from what was written, instead of deciding again
// from the old status and failing its write with a Conflict: one wasted
// request and a retry per gang otherwise.
type writtenGroups struct {
	mu sync.Mutex
	m  map[scheduling.GroupKey]writtenGroup
}

type writtenGroup struct {
	replaced sets.Set[string]
	obj      *v1alpha1.PodGroup
}

func newWrittenGroups() *writtenGroups {
	return &writtenGroups{m: map[scheduling.GroupKey]writtenGroup{}}
}

// fresh returns the newer of the cached group and the one last written for
// it. The entry is dropped once the cache has caught up, or once someone
// else wrote the group, since then the cache is the newer.
func (w *writtenGroups) fresh(key scheduling.GroupKey, cached *v1alpha1.PodGroup) *v1alpha1.PodGroup {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[key]
	if !ok {
		return cached
	}
	if cached.UID == e.obj.UID && e.replaced.Has(cached.ResourceVersion) {
		return e.obj
	}
	delete(w.m, key)
	return cached
}

// wrote records that a status write replaced from with obj.
func (w *writtenGroups) wrote(key scheduling.GroupKey, from *v1alpha1.PodGroup, obj *v1alpha1.PodGroup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[key]
	if !ok || e.obj.UID != obj.UID {
		e = writtenGroup{replaced: sets.New[string]()}
	}
	e.replaced.Insert(from.ResourceVersion)
	e.obj = obj
	w.m[key] = e
}

// forget drops a deleted group's entry.
func (w *writtenGroups) forget(key scheduling.GroupKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}
