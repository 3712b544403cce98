package podgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	schedulingvalidation "github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

// syncMissingGroup is the path of docs/controller.md for pods whose
// PodGroup does not exist. Pods
// being deleted lose the tracking finalizer at once, so that none is stuck
// Terminating. If a pod carries creation annotations, the controller creates
// the group, within the bounds of createdbound.go, and returns when to try
// again if they hold it; otherwise the pods stay gated and are told what they
// wait for.
func (c *Controller) syncMissingGroup(ctx context.Context, namespace, name string, pods []*corev1.Pod) (time.Duration, error) {
	key := groupKey(namespace, name)
	if len(pods) == 0 {
		c.created.forget(key)
		return 0, nil
	}
	var deleting []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil && scheduling.HasTrackingFinalizer(p) && !c.memory.expecting(key, finalizersRemoved, p.UID) {
			deleting = append(deleting, p)
		}
	}
	if len(deleting) > 0 {
		done, errs := c.patchPods(ctx, deleting, removeFinalizerPatch, true)
		c.memory.expect(key, finalizersRemoved, done...)
		if len(errs) > 0 {
			return 0, fmt.Errorf("releasing deleted pods of missing PodGroup %s/%s: %w", namespace, name, errors.Join(errs...))
		}
	}

	// Only pods that wait at the gate decide: a released pod means that its
	// group existed and ran it, so a group missing now was deleted, and a
	// user who deletes a group means it. Running and finished pods never
	// bring it back; a gated pod that arrives after the deletion does.
	waiting := slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool {
		return !scheduling.HasGate(p) || scheduling.IsEnding(p)
	})
	pg, from, handled := c.groupFromRoles(namespace, name, waiting) // rolesfrompods.go
	if !handled {
		pg, from = c.groupFromAnnotations(namespace, name, waiting)
	} else if pg != nil {
		// As specFromAnnotations does on the other path.
		constraints, err := schedulingvalidation.ConstraintsFromAnnotations(from.Annotations)
		if err != nil {
			c.warnOnce(from.UID, scheduling.EventInvalidAnnotation, func() {
				c.recorder.Event(from, corev1.EventTypeWarning, scheduling.EventInvalidAnnotation, err.Error())
			})
			pg = nil
		} else {
			pg.Spec.SchedulingConstraints = constraints
		}
	}
	if pg == nil {
		c.created.forget(key)
		for _, p := range waiting {
			c.warnOnce(p.UID, scheduling.EventWaitingForPodGroup, func() {
				c.recorder.Eventf(p, corev1.EventTypeNormal, scheduling.EventWaitingForPodGroup, "waiting for PodGroup %s", name)
			})
		}
		return 0, nil
	}
	// Before the owners are read, so that a held group costs no API call.
	if retryAfter, held := c.holdCreation(ctx, key, waiting); held {
		return retryAfter, nil
	}
	if byInstance(from) {
		ok, err := c.fromInstance(ctx, pg, from) // instance.go: owners and size
		if err != nil || !ok {
			return 0, err
		}
	} else {
		pg.OwnerReferences = createdGroupOwners(from)
	}
	_, err := c.muster.SchedulingV1alpha1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{FieldManager: scheduling.ControllerName})
	switch {
	case apierrors.IsAlreadyExists(err):
		return 0, nil // the informer brings it, and its pods are synced then.
	case apierrors.IsInvalid(err):
		// A Workload or template that does not exist: tell the pod, do not retry hot.
		c.warnOnce(from.UID, scheduling.EventInvalidAnnotation, func() {
			c.recorder.Eventf(from, corev1.EventTypeWarning, scheduling.EventInvalidAnnotation, "cannot create PodGroup %s: %v", name, err)
		})
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("creating PodGroup %s/%s from pod %s: %w", namespace, name, from.Name, err)
	}
	c.recorder.Eventf(from, corev1.EventTypeNormal, scheduling.EventPodGroupCreated, "created PodGroup %s%s", name, sizedByMessage(pg))
	klog.FromContext(ctx).V(2).Info("Created PodGroup from pod annotations", "pod", klog.KObj(from))
	return 0, nil
}

// groupFromAnnotations builds the PodGroup that the oldest pod with creation
// annotations asks for, or nil when no pod asks for one.
func (c *Controller) groupFromAnnotations(namespace, name string, pods []*corev1.Pod) (*v1alpha1.PodGroup, *corev1.Pod) {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	for _, p := range sorted {
		if p.DeletionTimestamp != nil {
			continue
		}
		spec, ok, err := specFromAnnotations(p.Annotations)
		if err != nil {
			c.warnOnce(p.UID, scheduling.EventInvalidAnnotation, func() {
				c.recorder.Event(p, corev1.EventTypeWarning, scheduling.EventInvalidAnnotation, err.Error())
			})
			continue
		}
		if !ok {
			continue
		}
		return &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   namespace,
				Annotations: map[string]string{scheduling.CreatedFromPodAnnotation: p.Name},
			},
			Spec: spec,
		}, p
	}
	return nil, nil
}

// specFromAnnotations reads the creation annotations of one pod. ok is false
// when the pod carries none. What-if reviews read them with the same
// function (schedulingvalidation.SpecFromAnnotations).
func specFromAnnotations(ann map[string]string) (spec v1alpha1.PodGroupSpec, ok bool, err error) {
	return schedulingvalidation.SpecFromAnnotations(ann)
}
