package podgroup

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// finalizerExpectations remembers pods from which the controller removed
// something (the tracking finalizer, or the admission gate) but whose update
// the informer has not shown yet. Until it does, the cache still shows what
// was removed. For the finalizer, without this record the next sync would put
// the already counted pod into uncountedTerminatedPods again and count it
// twice; the Job controller guards KEP-2307 the same way. For the gate, it
// saves a patch that would fail its test against the pod as it now is.
type finalizerExpectations struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{uids: map[types.UID]struct{}{}}
}

// expectRemoval records that the removal from these pods is done in the API.
func (e *finalizerExpectations) expectRemoval(uids ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range uids {
		e.uids[u] = struct{}{}
	}
}

// observed is called when the informer shows the pod without what was
// removed, or the pod's deletion.
func (e *finalizerExpectations) observed(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.uids, uid)
}

// pending reports whether the removal from the pod is not yet observed.
func (e *finalizerExpectations) pending(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.uids[uid]
	return ok
}
