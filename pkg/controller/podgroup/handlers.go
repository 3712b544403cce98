package podgroup

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func (c *Controller) addPod(obj interface{}) {
	p := obj.(*corev1.Pod)
	key, ok := podGroupKey(p)
	if !ok || !c.managedNamespace(p.Namespace) {
		return
	}
	c.mu.Lock()
	c.lastPodSeen[key] = c.clock.Now()
	c.mu.Unlock()
	c.queue.Add(key)
}

func (c *Controller) updatePod(oldObj, newObj interface{}) {
	old, p := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if old.ResourceVersion == p.ResourceVersion {
		return // a resync: nothing changed.
	}
	if !c.managedNamespace(p.Namespace) {
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
	if key, ok := podGroupKey(p); ok && c.managedNamespace(p.Namespace) {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueObject(obj interface{}) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) deletePodGroup(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	metrics.forgetGroup(key)
	c.mu.Lock()
	delete(c.lastFlush, key)
	delete(c.lastPodSeen, key)
	c.mu.Unlock()
	c.queue.Add(key) // its pods may now be orphans waiting for a new group.
}
