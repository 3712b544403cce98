package podgroup

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// finalizerExpectations remembers pods whose tracking finalizer the
// controller removed but whose update the informer has not shown yet. Until
// it does, the cache still shows the finalizer, and without this record the
// next sync would put the already counted pod into uncountedTerminatedPods
// again and count it twice. The Job controller guards KEP-2307 the same way.
type finalizerExpectations struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{uids: map[types.UID]struct{}{}}
}

// expectRemoval records that the finalizer of these pods is gone in the API.
func (e *finalizerExpectations) expectRemoval(uids ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range uids {
		e.uids[u] = struct{}{}
	}
}

// observed is called when the informer shows a pod without the finalizer,
// or the pod's deletion.
func (e *finalizerExpectations) observed(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.uids, uid)
}

// pending reports whether the pod's finalizer removal is not yet observed.
func (e *finalizerExpectations) pending(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.uids[uid]
	return ok
}
