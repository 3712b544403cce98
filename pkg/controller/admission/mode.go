package admission

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// Mode is the one place where the admission modes differ. With
// --admission=count a complete gang is released at once, whatever the
// free capacity. With --admission=capacity (pkg/controller/capacityadmission)
// it is released only once an admission cycle has placed every pod on a
// snapshot of the cluster, and each pod is pinned to its node in the patch
// that releases it. The controller calls the mode at the points of a sync
// and of its event handlers listed here, and never asks which mode runs: a
// rule that differs between the modes is a method here. A mode decides;
// it never writes a group's status.
type Mode interface {
	// Start runs what the mode needs beside the sync workers until ctx
	// ends, in wg. The controller calls it before the informer caches
	// sync, and closes synced once they have.
	Start(ctx context.Context, wg *sync.WaitGroup, synced <-chan struct{})

	// AdmitGang is step 6 for a complete gang that is not yet admitted:
	// need is minCount and later the pods of createdLater roles not yet
	// created. The decision says whether the gang is admitted now, why,
	// and what status records for it.
	AdmitGang(g Group, need, later int32, now time.Time) Decision
	// AdmitJoiners is step 6 for an admitted group: the pods that joined
	// it, and the places reserved for pods not yet created. The decision's
	// Recheck is when to look again, for a reservation that times out.
	AdmitJoiners(g Group, now time.Time) Decision
	// Withdraw takes a group out of admission: it has nothing to place now.
	Withdraw(key scheduling.GroupKey)
	// Drop forgets all that admission decided for a group and that nothing
	// will carry out any more: the group is going, or its namespace is no
	// longer managed.
	Drop(key scheduling.GroupKey)
	// Recorded says that the group's status now holds a decision taken
	// from an admission cycle (Decision.FromCycle).
	Recorded(key scheduling.GroupKey)
	// ReleaseTo is step 9's rule for one gated pod of an admitted group,
	// given the group's placements: ok is false while the pod waits for a
	// place, and node is where the releasing patch pins it, "" for nowhere.
	ReleaseTo(placed map[types.UID]string, p *corev1.Pod) (node string, ok bool)
	// BeforeRelease is step 9's first write for a group that has pods to
	// release: what must go before they are released (a capacity request
	// whose room they take).
	BeforeRelease(ctx context.Context, key scheduling.GroupKey) error
	// ExplainStalled says which of the scheduler's filters refuses a
	// released pod on the node it is pinned to, or "" if none does or the
	// mode cannot tell (step 7b).
	ExplainStalled(p *corev1.Pod, node string) string
	// PreemptedForReleased reports whether kube-scheduler preempted victim,
	// a pod of the group key, for a pod that Muster released: one pinned
	// to victim's node that waits for it, at a higher priority (step 6b).
	PreemptedForReleased(victim *corev1.Pod, key scheduling.GroupKey) bool
	// UnreservedLater is how many missing pods of createdLater roles a
	// release counts as present although nothing is reserved for them
	// (step 9's holdShort).
	UnreservedLater(g Group) int32

	// ResolveVictim is a victim of a recorded preemption with its
	// namespace, name and UID, which a victim in another namespace is
	// recorded without (scheduling.VictimRef); ok is false when such a
	// victim cannot be found: it is gone.
	ResolveVictim(v v1alpha1.PreemptionVictim) (resolved v1alpha1.PreemptionVictim, ok bool)

	// ObservePod tells admission that one of Muster's pods changed, or is
	// gone.
	ObservePod(p *corev1.Pod, gone bool)
	// ObserveGroup tells admission that a group changed; pg is nil once it
	// is gone.
	ObserveGroup(key scheduling.GroupKey, pg *v1alpha1.PodGroup)
}
