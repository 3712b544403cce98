package podgroup

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// groupMemory is all the controller remembers of one group between its
// syncs: what the informer cache cannot tell it yet, or at all. A sync loads
// it (and settles its expectations) once at its start (groupMemories.load)
// and saves it once at its end (save); a deleted group's is forgotten in
// one place (forget).
type groupMemory struct {
	// lastPodSeen is when the newest pod of the group was first seen, for
	// the gate-removal latency metric. Kept only while the group has pods,
	// so that pods of groups that never come cannot grow it without bound.
	lastPodSeen time.Time
	// batchStart is when the first change of the group's status that waits
	// for the batch period appeared; zero when none waits. A status write
	// ends the batch (account.go).
	batchStart time.Time
	// written is what the last status write returned, until the informer
	// shows it (written.go).
	written *writtenGroup
	// rejection is the last status write the API refused for good, so that
	// admission does not decide the same again at once (statusrejected.go).
	rejection *rejection
	// expected holds the expectation sets, by what they expect.
	expected [expectationKinds]sets.Set[types.UID]
}

// expectation names what an expectation set expects of its pods: a write
// of this controller that is done in the API, which the informer cache may
// not show yet.
//
// For a finalizer taken off, without this record a sync working from that
// cache would put the already counted pod into uncountedTerminatedPods again
// and count it twice; the Job controller guards KEP-2307 the same way. For
// a gate taken off or a finalizer put back, it saves a patch that would fail
// its test against the pod as it now is.
//
// An expectation is dropped only by a sync whose own snapshot of the
// group's pods no longer shows the pod as it was before the write (or no
// longer has the pod). Dropping it from an informer handler instead would
// race with a sync that took its snapshot just before the cache caught up,
// and that sync would act on the stale snapshot.
type expectation int

const (
	// finalizersRemoved are pods whose tracking finalizer was taken off
	// (steps 10 and cleanup).
	finalizersRemoved expectation = iota
	// gatesRemoved are pods whose admission gate was taken off (step 9).
	gatesRemoved
	// finalizersAdded are running pods to which the tracking finalizer was
	// put back (step 9a, adopt.go).
	finalizersAdded
	// uidsCounted are the pods whose finalizer was taken off once they were
	// recorded: they are counted, or will be by the write of step 13. Kept
	// while the pod exists, so that a finalizer put back on one is never
	// counted again (recount.go); it costs one UID per pod the cache holds
	// anyway, never more.
	uidsCounted
	expectationKinds
)

// stillShows reports whether p still looks as it did before the write an
// expectation of kind e records.
func (e expectation) stillShows(p *corev1.Pod) bool {
	switch e {
	case finalizersRemoved:
		return scheduling.HasTrackingFinalizer(p)
	case gatesRemoved:
		return scheduling.HasGate(p)
	case finalizersAdded:
		return !scheduling.HasTrackingFinalizer(p)
	default: // uidsCounted: for as long as the pod exists.
		return true
	}
}

// empty reports whether m remembers nothing.
func (m *groupMemory) empty() bool {
	if !m.lastPodSeen.IsZero() || !m.batchStart.IsZero() || m.written != nil || m.rejection != nil {
		return false
	}
	for _, set := range m.expected {
		if set.Len() > 0 {
			return false
		}
	}
	return true
}

// groupMemories holds every group's memory. Informer handlers and other
// groups' syncs (a preemption writes its victims' status) touch a group's
// memory too, so every access holds mu, and an entry goes only when its
// own group's sync saves it empty.
type groupMemories struct {
	mu      sync.Mutex
	byGroup map[scheduling.GroupKey]*groupMemory
}

func newGroupMemories() *groupMemories {
	return &groupMemories{byGroup: map[scheduling.GroupKey]*groupMemory{}}
}

// of returns key's memory, made empty if there is none. Called with mu held.
func (g *groupMemories) of(key scheduling.GroupKey) *groupMemory {
	m := g.byGroup[key]
	if m == nil {
		m = &groupMemory{}
		g.byGroup[key] = m
	}
	return m
}

// peek returns key's memory, or nil. Called with mu held.
func (g *groupMemories) peek(key scheduling.GroupKey) *groupMemory {
	return g.byGroup[key]
}

// load is step 1, settle, at the start of a sync over pods, the group's
// pods as its snapshot shows them: each expectation that the snapshot has
// caught up with (the pod no longer shows what was before the write, or is
// gone) needs no more guarding.
func (g *groupMemories) load(key scheduling.GroupKey, pods []*corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.peek(key)
	if m == nil {
		return
	}
	if len(pods) == 0 {
		m.lastPodSeen = time.Time{}
	}
	for e, set := range m.expected {
		if set.Len() == 0 {
			continue
		}
		kind := expectation(e)
		stillShown := make(map[types.UID]bool, set.Len())
		for _, p := range pods {
			if set.Has(p.UID) {
				stillShown[p.UID] = kind.stillShows(p)
			}
		}
		for uid := range set {
			if !stillShown[uid] {
				set.Delete(uid)
			}
		}
	}
}

// save is the end of a sync: a memory left empty goes.
func (g *groupMemories) save(key scheduling.GroupKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.peek(key); m != nil && m.empty() {
		delete(g.byGroup, key)
	}
}

// forget drops what a deleted group's object implied: its batch, its last
// status write and when its last pod was seen. Its expectations stay, as
// they are about pods, which outlive the group: the next sync settles them.
func (g *groupMemories) forget(key scheduling.GroupKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.peek(key); m != nil {
		m.batchStart, m.written, m.lastPodSeen = time.Time{}, nil, time.Time{}
	}
}

// expect records that the write kind names is done in the API for these
// pods of the group.
func (g *groupMemories) expect(key scheduling.GroupKey, kind expectation, uids ...types.UID) {
	if len(uids) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.of(key)
	if m.expected[kind] == nil {
		m.expected[kind] = sets.New[types.UID]()
	}
	m.expected[kind].Insert(uids...)
}

// expecting reports whether the write kind names is done for a pod of the
// group but not yet seen by the last settled snapshot.
func (g *groupMemories) expecting(key scheduling.GroupKey, kind expectation, uid types.UID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.peek(key)
	return m != nil && m.expected[kind].Has(uid)
}

// sawPod notes that a pod of the group was first seen at now.
func (g *groupMemories) sawPod(key scheduling.GroupKey, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.of(key).lastPodSeen = now
}

// takeLastPodSeen returns when the group's newest pod was first seen, and
// forgets it, so that the latency is observed once per pod that completes a
// gang.
func (g *groupMemories) takeLastPodSeen(key scheduling.GroupKey) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.peek(key)
	if m == nil || m.lastPodSeen.IsZero() {
		return time.Time{}, false
	}
	seen := m.lastPodSeen
	m.lastPodSeen = time.Time{}
	return seen, true
}
