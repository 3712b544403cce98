package podgroup

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// removalExpectations remember, per group, pods from which the controller
// removed something (the tracking finalizer, or the admission gate) that the
// informer cache may still show. For the finalizer, without this record a
// sync working from that cache would put the already counted pod into
// uncountedTerminatedPods again and count it twice; the Job controller guards
// KEP-2307 the same way. For the gate, it saves a patch that would fail its
// test against the pod as it now is.
//
// An expectation is dropped only by a sync whose own snapshot of the group's
// pods no longer shows the removed thing (or no longer has the pod). Dropping
// it from an informer handler instead would race with a sync that took its
// snapshot just before the cache caught up, and that sync would act on the
// stale snapshot.
type removalExpectations struct {
	// shows reports whether a pod still carries what was removed.
	shows func(*corev1.Pod) bool

	mu      sync.Mutex
	byGroup map[scheduling.GroupKey]map[types.UID]struct{}
}

func newRemovalExpectations(shows func(*corev1.Pod) bool) *removalExpectations {
	return &removalExpectations{shows: shows, byGroup: map[scheduling.GroupKey]map[types.UID]struct{}{}}
}

// expect records that the removal from these pods of group key is done in the API.
func (e *removalExpectations) expect(key scheduling.GroupKey, uids ...types.UID) {
	if len(uids) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.byGroup[key]
	if set == nil {
		set = map[types.UID]struct{}{}
		e.byGroup[key] = set
	}
	for _, u := range uids {
		set[u] = struct{}{}
	}
}

// pending reports whether the removal from a pod of group key is not yet
// seen by the last settled snapshot.
func (e *removalExpectations) pending(key scheduling.GroupKey, uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.byGroup[key][uid]
	return ok
}

// settle is step 1: it drops the expectations that a sync's snapshot of the
// group's pods has caught up with: pods that no longer show what was
// removed, or are gone.
func (e *removalExpectations) settle(key scheduling.GroupKey, pods []*corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.byGroup[key]
	if len(set) == 0 {
		return
	}
	stillShown := make(map[types.UID]bool, len(set))
	for _, p := range pods {
		if _, ok := set[p.UID]; ok {
			stillShown[p.UID] = e.shows(p)
		}
	}
	for uid := range set {
		if !stillShown[uid] {
			delete(set, uid)
		}
	}
	if len(set) == 0 {
		delete(e.byGroup, key)
	}
}
