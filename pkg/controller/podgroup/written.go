package podgroup

import (
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// writtenGroup is what a group's memory keeps of the PodGroup that the
// controller's last status write returned, and the resourceVersions it
// replaced. A sync that runs before the informer has caught up with that
// write (a pod event right after it) starts from what was written, instead
// of deciding again from the old status and failing its write with a
// Conflict: one wasted request and a retry per gang otherwise.
type writtenGroup struct {
	replaced sets.Set[string]
	obj      *v1alpha1.PodGroup
}

// fresh returns the newer of the cached group and the one last written for
// it. The entry is dropped once the cache has caught up, or once someone
// else wrote the group, since then the cache is the newer.
func (g *groupMemories) fresh(key scheduling.GroupKey, cached *v1alpha1.PodGroup) *v1alpha1.PodGroup {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.peek(key)
	if m == nil || m.written == nil {
		return cached
	}
	if e := m.written; cached.UID == e.obj.UID && e.replaced.Has(cached.ResourceVersion) {
		return e.obj
	}
	m.written = nil
	return cached
}

// wrote records that a status write replaced from with obj.
func (g *groupMemories) wrote(key scheduling.GroupKey, from *v1alpha1.PodGroup, obj *v1alpha1.PodGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.of(key)
	if m.written == nil || m.written.obj.UID != obj.UID {
		m.written = &writtenGroup{replaced: sets.New[string]()}
	}
	m.written.replaced.Insert(from.ResourceVersion)
	m.written.obj = obj
}
