package podgroup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/instance"
)

// byInstance reports whether the pod's group is named after its workload
// instance (scheduling.GroupByAnnotation).
func byInstance(p *corev1.Pod) bool {
	_, ok := p.Annotations[scheduling.GroupByAnnotation]
	return ok
}

// fromInstance completes a group that syncMissingGroup creates from pod
// from, whose group is named after its workload instance: the instance's
// top owner owns it, beside the pod's Job or StatefulSet
// (createdGroupOwners), so that the garbage collector deletes it with the
// instance; and a group that no annotation sizes takes the size its owner
// says it runs (a Job's parallelism, a JobSet's replicated jobs, a
// LeaderWorkerSet's size, a RayCluster's head and workers). ok is false
// when nothing sizes it: the pod is told to set the min-count annotation.
func (c *Controller) fromInstance(ctx context.Context, pg *v1alpha1.PodGroup, from *corev1.Pod) (ok bool, err error) {
	start := metav1.GetControllerOfNoCopy(from)
	in := instance.Instance{Top: start}
	if c.owners != nil {
		if in, err = instance.Walk(ctx, c.owners, from.Namespace, start); err != nil {
			return false, err
		}
	}
	pg.OwnerReferences = instanceGroupOwners(from, in.Top)
	if pg.Spec.SchedulingPolicy.Gang != nil || pg.Spec.WorkloadRef != nil {
		return true, nil
	}
	if in.Size == 0 {
		c.warnOnce(from.UID, scheduling.EventInvalidAnnotation, func() {
			c.recorder.Eventf(from, corev1.EventTypeWarning, scheduling.EventInvalidAnnotation,
				"cannot create PodGroup %s: no owner of this pod says how many pods its instance runs; set the annotation %s", pg.Name, scheduling.MinCountAnnotation)
		})
		return false, nil
	}
	pg.Spec.SchedulingPolicy.Gang = &v1alpha1.GangSchedulingPolicy{MinCount: in.Size}
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[scheduling.SizedByAnnotation] = in.SizedBy
	return true, nil
}

// instanceGroupOwners are the owner references of a group named after its
// instance: the pod's Job or StatefulSet, as for any group created from
// pods, and the instance's top owner when it is another object. None is a
// controller: the group belongs to both, and goes once both have gone.
func instanceGroupOwners(from *corev1.Pod, top *metav1.OwnerReference) []metav1.OwnerReference {
	owners := createdGroupOwners(from)
	if top == nil {
		return owners
	}
	for _, o := range owners {
		if o.UID == top.UID {
			return owners
		}
	}
	return append(owners, metav1.OwnerReference{APIVersion: top.APIVersion, Kind: top.Kind, Name: top.Name, UID: top.UID})
}

// sizedByMessage says where a created group's minCount came from, for its
// creation event.
func sizedByMessage(pg *v1alpha1.PodGroup) string {
	by := pg.Annotations[scheduling.SizedByAnnotation]
	if by == "" || pg.Spec.SchedulingPolicy.Gang == nil {
		return ""
	}
	return fmt.Sprintf(" of %d pods, the size of %s", pg.Spec.SchedulingPolicy.Gang.MinCount, by)
}

// previousInstance is step 9's question for a finished group that the
// controller created for a workload instance: do pods of a later instance
// wait at its gate? It returns such a pod: one named by its instance whose
// controller is neither an owner of the group nor the controller of any of
// the group's released pods. That happens when an instance is submitted
// again under the same name (a Job deleted and created again) before the
// garbage collector has deleted the old one's group, or after the old one
// was deleted with its dependents orphaned. A pod with no controller
// cannot tell, and is not one.
func previousInstance(pg *v1alpha1.PodGroup, v *podView) *corev1.Pod {
	if _, created := pg.Annotations[scheduling.CreatedFromPodAnnotation]; !created || len(v.gatedPods) == 0 {
		return nil
	}
	known := sets.New[types.UID]()
	for _, o := range pg.OwnerReferences {
		known.Insert(o.UID)
	}
	for _, p := range v.all {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && !scheduling.HasGate(p) {
			known.Insert(ref.UID)
		}
	}
	for _, p := range v.gatedPods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && byInstance(p) && !known.Has(ref.UID) {
			return p
		}
	}
	return nil
}

// deletePreviousInstance deletes a finished group whose name a later
// instance's pod (next) now has, guarded by the group's UID and
// resourceVersion. The later instance's pods then create a group of their
// own (syncMissingGroup), so a finished group never traps a new instance.
func (c *Controller) deletePreviousInstance(ctx context.Context, pg *v1alpha1.PodGroup, next *corev1.Pod) error {
	err := c.muster.SchedulingV1alpha1().PodGroups(pg.Namespace).Delete(ctx, pg.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pg.UID, ResourceVersion: &pg.ResourceVersion},
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil // gone, or changed: the next sync decides again.
	case err != nil:
		return fmt.Errorf("deleting finished PodGroup %s/%s of a previous instance: %w", pg.Namespace, pg.Name, err)
	}
	ref := metav1.GetControllerOfNoCopy(next)
	c.recorder.Eventf(pg, corev1.EventTypeNormal, scheduling.EventPreviousInstance,
		"deleted: finished, and pod %s of %s %s, a later instance of the same name, waits for a group of its own", next.Name, ref.Kind, ref.Name)
	return nil
}
