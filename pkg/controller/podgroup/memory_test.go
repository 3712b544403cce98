package podgroup

import (
	"time"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// lastPodSeenOf reads a group's lastPodSeen, for tests.
func (g *groupMemories) lastPodSeenOf(key scheduling.GroupKey) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.peek(key); m != nil && !m.lastPodSeen.IsZero() {
		return m.lastPodSeen, true
	}
	return time.Time{}, false
}

// batchStartOf reads a group's batchStart, for tests.
func (g *groupMemories) batchStartOf(key scheduling.GroupKey) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.peek(key); m != nil && !m.batchStart.IsZero() {
		return m.batchStart, true
	}
	return time.Time{}, false
}

// lastPodsSeen counts the groups whose lastPodSeen is remembered, for tests.
func (g *groupMemories) lastPodsSeen() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, m := range g.byGroup {
		if !m.lastPodSeen.IsZero() {
			n++
		}
	}
	return n
}
