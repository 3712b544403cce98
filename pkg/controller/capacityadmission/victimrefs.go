package capacityadmission

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// maxVictimRefs bounds victimRefs: past it the memory starts again, and a
// ref it forgot is found by the tracker's scan (capacity.FindVictim).
const maxVictimRefs = 4096

// victimRefs maps the ref of each victim in another namespace that this
// replica chose (scheduling.VictimRef) to its key and UID, so that a
// preemption recorded by ref is carried out without hashing every UID.
type victimRefs struct {
	mu   sync.Mutex
	refs map[string]victimID
}

type victimID struct {
	key string
	uid types.UID
}

// remember records the refs of a preemption's victims.
func (r *victimRefs) remember(vs []*capacity.Victim) {
	for _, v := range vs {
		r.put(scheduling.VictimRef(v.UID), victimID{key: v.Key, uid: v.UID})
	}
}

func (r *victimRefs) get(ref string) (victimID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.refs[ref]
	return id, ok
}

// put records one ref; past maxVictimRefs the memory starts again.
func (r *victimRefs) put(ref string, id victimID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs == nil || len(r.refs) >= maxVictimRefs {
		r.refs = map[string]victimID{}
	}
	r.refs[ref] = id
}

// ResolveVictim is a recorded victim with its namespace, name and UID: as
// recorded, or, for a victim in another namespace recorded by ref, found in
// this replica's memory of its own decisions or else among the groups and
// pods the tracker knows. ok is false for a ref of a victim that is gone.
func (a *Mode) ResolveVictim(v v1alpha1.PreemptionVictim) (v1alpha1.PreemptionVictim, bool) {
	if v.Ref == "" {
		return v, true
	}
	id, ok := a.victimRefs.get(v.Ref)
	if !ok {
		key, uid, found := a.tracker.FindVictim(v.Kind, v.Ref)
		if !found {
			return v, false
		}
		id = victimID{key: key, uid: uid}
		a.victimRefs.put(v.Ref, id)
	}
	v.Namespace, v.Name, _ = cache.SplitMetaNamespaceKey(id.key)
	v.UID = id.uid
	return v, true
}
