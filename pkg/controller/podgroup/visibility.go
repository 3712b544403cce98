package podgroup

import (
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
	listers "github.com/muster-dev/muster/pkg/generated/listers/scheduling/v1alpha1"
)

// What the API's what-if and queue views read of the leader's controller
// (pkg/visibility): its capacity-aware admission, the PodGroups it sees,
// and whether it has seen the whole cluster yet.

// Capacity returns the capacity-aware admission mode, or nil with
// --admission=count, which has no queue and places nothing.
func (c *Controller) Capacity() *capacityadmission.Mode {
	m, _ := c.admitter.(*capacityadmission.Mode)
	return m
}

// PodGroups lists the PodGroups the controller sees.
func (c *Controller) PodGroups() listers.PodGroupLister { return c.pgLister }

// HasSynced reports whether every informer and handler the controller
// waits for has synced: before that, its admission has not seen every
// group and reservation, and a what-if would answer from part of them.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

var _ cache.InformerSynced = (&Controller{}).HasSynced
