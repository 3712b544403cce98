package capacity

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// FindVictim is the victim of kind whose UID's scheduling.VictimRef is ref,
// among the groups and the unmanaged pods the tracker knows: its key
// (namespace/name) and UID, or ok false if there is none. It hashes the
// UID of every group (or unmanaged pod), so it is the fallback of a memory
// of the refs this replica decided (capacityadmission's victimRefs): a new
// leader calls it once per ref of a preemption that a leader before it
// recorded.
func (t *Tracker) FindVictim(kind, ref string) (key string, uid types.UID, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	switch kind {
	case scheduling.VictimKindPodGroup:
		for k, st := range t.groups {
			if scheduling.VictimRef(st.UID) == ref {
				return k.String(), st.UID, true
			}
		}
	case scheduling.VictimKindPod:
		for uid, h := range t.unmanaged {
			if scheduling.VictimRef(uid) == ref {
				p := h.info.GetPod()
				return p.Namespace + "/" + p.Name, uid, true
			}
		}
		for uid, d := range t.deleting {
			if scheduling.VictimRef(uid) == ref {
				return d.key, uid, true
			}
		}
	}
	return "", "", false
}
