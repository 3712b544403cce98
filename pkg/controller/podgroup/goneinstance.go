package podgroup

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/instance"
)

// goneInstancePods is how many of the group's released, active pods that
// are named by instance belong to an instance that is being torn down: an
// owner up the pod's chain of controllers is gone, or was replaced by
// another object of its name (instance.Walk's Gone). holdShort does not
// count them toward a release. A LeaderWorkerSet restarts a group by
// deleting its leader pod: the leader StatefulSet recreates it at once,
// under the same name and group, while the old workers (under a worker
// StatefulSet that the old leader owned) still run until the garbage
// collector deletes them. Counted, they would release the new leader alone,
// and then each new worker as it comes, rather than the new group whole.
//
// It reads owners only when it is asked (a release that these pods would
// complete), once per distinct controller, so a gang of a thousand pods
// under one StatefulSet costs one walk. Without an owner reader, or when a
// read fails, it counts no pod as gone, as before.
func (c *Controller) goneInstancePods(ctx context.Context, v *podView) int32 {
	if c.owners == nil {
		return 0
	}
	gone := map[types.UID]bool{}
	var n int32
	for _, p := range v.all {
		if !byInstance(p) || scheduling.HasGate(p) || !scheduling.IsActive(p, c.cfg.FastRelease) {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil {
			continue
		}
		g, walked := gone[ref.UID]
		if !walked {
			in, err := instance.Walk(ctx, c.owners, p.Namespace, ref)
			g = err == nil && in.Gone
			gone[ref.UID] = g
		}
		if g {
			n++
		}
	}
	return n
}
