package podgroup

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func (c *Controller) addPod(obj interface{}) {
	p := obj.(*corev1.Pod)
	c.admitter.ObservePod(p, false)
	key, ok := podGroupKey(p)
	if !ok || !(c.managedNamespace(p.Namespace) || holdsFinalizerToRelease(p)) {
		return
	}
	c.memory.sawPod(key, c.clock.Now())
	c.queue.Add(key)
}

func (c *Controller) updatePod(oldObj, newObj interface{}) {
	old, p := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if old.ResourceVersion == p.ResourceVersion {
		return // a resync: nothing changed.
	}
	c.admitter.ObservePod(p, false)
	if !c.managedNamespace(p.Namespace) && !holdsFinalizerToRelease(p) {
		return
	}
	if key, ok := podGroupKey(p); ok {
		c.queue.Add(key)
	}
	// The label is immutable through the webhook, but a pod admitted
	// without it may still change: sync the group it left too.
	if key, ok := podGroupKey(old); ok && old.Labels[scheduling.PodGroupLabel] != p.Labels[scheduling.PodGroupLabel] {
		c.queue.Add(key)
	}
}

func (c *Controller) deletePod(obj interface{}) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
		if !isTomb {
			return
		}
		if p, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	c.forgetWarnings(p.UID)
	c.admitter.ObservePod(p, true)
	if key, ok := podGroupKey(p); ok && c.managedNamespace(p.Namespace) {
		c.queue.Add(key)
	}
}

// holdsFinalizerToRelease reports whether a pod carries Muster's finalizer
// and has ended or is being deleted: Muster takes its finalizer off such a
// pod in any namespace, managed or not, so that none is ever stuck.
func holdsFinalizerToRelease(p *corev1.Pod) bool {
	return scheduling.HasTrackingFinalizer(p) && scheduling.IsEnding(p)
}

// namespaceChanged requeues the groups of a namespace that was created or
// relabelled: it may have come under the namespace selector, or left it.
func (c *Controller) namespaceChanged(oldObj, newObj interface{}) {
	ns, ok := newObj.(*corev1.Namespace)
	if !ok {
		return
	}
	if old, ok := oldObj.(*corev1.Namespace); ok && maps.Equal(old.Labels, ns.Labels) {
		return
	}
	keys := sets.New[scheduling.GroupKey]()
	if groups, err := c.pgLister.PodGroups(ns.Name).List(labels.Everything()); err == nil {
		for _, pg := range groups {
			keys.Insert(groupKey(pg.Namespace, pg.Name))
		}
	}
	// Groups that exist only as their pods' label, too.
	if objs, err := c.podIndexer.ByIndex(cache.NamespaceIndex, ns.Name); err == nil {
		for _, o := range objs {
			if key, ok := podGroupKey(o.(*corev1.Pod)); ok {
				keys.Insert(key)
			}
		}
	}
	for key := range keys {
		c.queue.Add(key)
	}
}

func (c *Controller) addPodGroup(obj interface{}) {
	if pg, ok := obj.(*v1alpha1.PodGroup); ok {
		key := groupKey(pg.Namespace, pg.Name)
		c.admitter.ObserveGroup(key, pg)
		c.created.forget(key) // it exists: nothing waits to create it.
		c.queue.Add(key)
	}
}

func (c *Controller) deletePodGroup(obj interface{}) {
	name, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		return
	}
	key := groupKey(name.Namespace, name.Name)
	c.metrics.forgetGroup(key)
	c.admitter.ObserveGroup(key, nil)
	c.memory.forget(key)
	c.queue.Add(key) // its pods may now be orphans waiting for a new group.
	// It made room under --max-podgroups-per-namespace for the groups that
	// wait there to be created from pods.
	for _, k := range c.created.releaseWaiting(name.Namespace) {
		c.queue.Add(k)
	}
}
