package podgroup

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// admitter is the one place where the two admission modes differ. With
// --admission=count (countAdmission) a complete gang is released at once,
// whatever the free capacity. With --admission=capacity (capacityAdmission)
// it is released only once an admission cycle has placed every pod on a
// snapshot of the cluster, and each pod is pinned to its node in the patch
// that releases it. The controller calls the admitter at the points of a
// sync and of its event handlers listed here, and never asks which mode
// runs: a rule that differs between the modes is a method here.
type admitter interface {
	// start runs what the mode needs beside the sync workers until ctx
	// ends, in wg. Run calls it before the informer caches sync, and
	// closes synced once they have.
	start(ctx context.Context, wg *sync.WaitGroup, synced <-chan struct{})

	// admitGang is step 6 for a complete gang that is not yet admitted:
	// need is minCount and later the pods of createdLater roles not yet
	// created. The decision says whether the gang is admitted now, why,
	// and what status records for it; the controller writes it
	// (recordDecision).
	admitGang(g admission.Group, need, later int32, now time.Time) admission.Decision
	// admitJoiners is step 6 for an admitted group: the pods that joined
	// it, and the places reserved for pods not yet created. The decision's
	// Recheck is when to look again, for a reservation that times out.
	admitJoiners(g admission.Group, now time.Time) admission.Decision
	// withdraw takes a group out of admission: it has nothing to place now.
	withdraw(key scheduling.GroupKey)
	// drop forgets all that admission decided for a group and that nothing
	// will carry out any more: the group is going, or its namespace is no
	// longer managed.
	drop(key scheduling.GroupKey)
	// recorded says that the group's status now holds what this sync took
	// from admission (podView.decisionApplied).
	recorded(key scheduling.GroupKey)
	// releaseTo is step 9's rule for one gated pod of an admitted group,
	// given the group's placements: ok is false while the pod waits for a
	// place, and node is where the releasing patch pins it, "" for nowhere.
	releaseTo(placed map[types.UID]string, p *corev1.Pod) (node string, ok bool)
	// beforeRelease is step 9's first write for a group that has pods to
	// release: what must go before they are released (a capacity request
	// whose room they take).
	beforeRelease(ctx context.Context, key scheduling.GroupKey) error
	// explainStalled says which of the scheduler's filters refuses a
	// released pod on the node it is pinned to, or "" if none does or the
	// mode cannot tell (checkStalled).
	explainStalled(p *corev1.Pod, node string) string
	// unreservedLater is how many missing pods of createdLater roles a
	// release counts as present although nothing is reserved for them
	// (holdShort).
	unreservedLater(g admission.Group) int32

	// observePod tells admission that one of Muster's pods changed, or is
	// gone.
	observePod(p *corev1.Pod, gone bool)
	// observeGroup tells admission that a group changed; pg is nil once it
	// is gone.
	observeGroup(key scheduling.GroupKey, pg *v1alpha1.PodGroup)
}

// newAdmitter builds the admitter cfg.Admission asks for, and returns what
// Run must wait for before the first sync.
func (c *Controller) newAdmitter(nodes coreinformers.NodeInformer) (admitter, []cache.InformerSynced, error) {
	if c.cfg.Admission == AdmissionCapacity {
		return newCapacityAdmission(c, nodes)
	}
	return countAdmission{}, nil, nil
}
