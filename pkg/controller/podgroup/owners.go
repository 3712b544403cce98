package podgroup

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// ownerKind is an owner reference's apiVersion and kind, compared as
// written: the Job and StatefulSet controllers write exactly batch/v1 and
// apps/v1.
type ownerKind struct{ apiVersion, kind string }

// The controllers of pods whose state a sync reads: a running Job keeps its
// group from failing (step 12, jobs.go), and an OrderedReady StatefulSet
// can never form a gang (step 6, orderedready.go).
var (
	jobOwner         = ownerKind{batchv1.SchemeGroupVersion.String(), "Job"}
	statefulSetOwner = ownerKind{appsv1.SchemeGroupVersion.String(), "StatefulSet"}
)

// OwnerIndex indexes pods by the UID of their controller, when it is a Job
// or a StatefulSet, so that an event of one of those requeues the groups of
// its own pods without scanning the cache.
const OwnerIndex = "muster-owner"

// readOwner returns the pod's controller reference if it names a kind whose
// state a sync reads.
func readOwner(p *corev1.Pod) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return nil
	}
	if k := (ownerKind{ref.APIVersion, ref.Kind}); k != jobOwner && k != statefulSetOwner {
		return nil
	}
	return ref
}

// ownedBy returns the name and UID of the pod's controller if it is of
// kind k.
func ownedBy(p *corev1.Pod, k ownerKind) (string, types.UID, bool) {
	ref := readOwner(p)
	if ref == nil || (ownerKind{ref.APIVersion, ref.Kind}) != k {
		return "", "", false
	}
	return ref.Name, ref.UID, true
}

// keptOwners is what TransformPod keeps of a pod's owner references: the
// controller reference, only if a sync reads its kind, or whatever its
// kind when the pod's group is named after its workload instance: the
// walk to the instance's top owner starts there (instance.go).
func keptOwners(p *corev1.Pod) []metav1.OwnerReference {
	var ref *metav1.OwnerReference
	if byInstance(p) {
		ref = metav1.GetControllerOfNoCopy(p)
	} else {
		ref = readOwner(p)
	}
	if ref == nil {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Controller: ptr.To(true)}}
}

// createdGroupOwners are the owner references of a group the controller
// creates from pod annotations: the pod's controller, when it is a Job or a
// StatefulSet, as a plain (not controlling) reference. Deleting the
// workload then has the garbage collector delete its group too, as it does
// the pods, and a group whose Job still runs waits for it even while none
// of its pods exists (a suspended Job deleted them all).
func createdGroupOwners(p *corev1.Pod) []metav1.OwnerReference {
	ref := readOwner(p)
	if ref == nil {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}}
}

// TransformOwner is the transform of the Job and StatefulSet informers: it
// keeps identity (namespace, name, UID, resourceVersion) and what a sync
// reads, so that every Job and StatefulSet of the cluster costs the cache a
// few hundred bytes: of a Job, whether it has ended (its Complete and Failed
// conditions, type and status only); of a StatefulSet, its
// podManagementPolicy. Other objects pass unchanged. It is idempotent.
func TransformOwner(obj interface{}) (interface{}, error) {
	switch o := obj.(type) {
	case *batchv1.Job:
		var conds []batchv1.JobCondition
		for _, c := range o.Status.Conditions {
			if c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed {
				conds = append(conds, batchv1.JobCondition{Type: c.Type, Status: c.Status})
			}
		}
		return &batchv1.Job{ObjectMeta: ownerMeta(o.ObjectMeta), Status: batchv1.JobStatus{Conditions: conds}}, nil
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: ownerMeta(o.ObjectMeta), Spec: appsv1.StatefulSetSpec{PodManagementPolicy: o.Spec.PodManagementPolicy}}, nil
	}
	return obj, nil
}

func ownerMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
}

// addOwnerIndexer installs OwnerIndex on the pod informer; New calls it.
func addOwnerIndexer(informer cache.SharedIndexInformer) error {
	return informer.AddIndexers(cache.Indexers{OwnerIndex: func(obj interface{}) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("indexing %T as a pod", obj)
		}
		if ref := readOwner(p); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}})
}

// addGroupOwnerIndexer installs OwnerIndex on the PodGroup informer: the
// groups that name a Job or a StatefulSet as an owner.
func addGroupOwnerIndexer(informer cache.SharedIndexInformer) error {
	return informer.AddIndexers(cache.Indexers{OwnerIndex: func(obj interface{}) ([]string, error) {
		pg, ok := obj.(*v1alpha1.PodGroup)
		if !ok {
			return nil, fmt.Errorf("indexing %T as a PodGroup", obj)
		}
		var uids []string
		for _, ref := range pg.OwnerReferences {
			if k := (ownerKind{ref.APIVersion, ref.Kind}); k == jobOwner || k == statefulSetOwner {
				uids = append(uids, string(ref.UID))
			}
		}
		return uids, nil
	}})
}

// requeueOwned queues the groups of the pods that owner controls and the
// groups it owns, from OwnerIndex: an owner's event costs its own pods and
// groups, never all of them.
func (c *Controller) requeueOwned(owner types.UID) {
	keys := sets.New[scheduling.GroupKey]()
	if objs, err := c.podIndexer.ByIndex(OwnerIndex, string(owner)); err == nil {
		for _, o := range objs {
			if p := o.(*corev1.Pod); c.managedNamespace(p.Namespace) {
				if key, ok := podGroupKey(p); ok {
					keys.Insert(key)
				}
			}
		}
	}
	if objs, err := c.pgIndexer.ByIndex(OwnerIndex, string(owner)); err == nil {
		for _, o := range objs {
			if pg := o.(*v1alpha1.PodGroup); c.managedNamespace(pg.Namespace) {
				keys.Insert(groupKey(pg.Namespace, pg.Name))
			}
		}
	}
	for key := range keys {
		c.queue.Add(key)
	}
}

// addOwner requeues the groups of a Job or StatefulSet that appears: its
// pods may have reached the cache first, and been synced without it.
func (c *Controller) addOwner(obj interface{}) {
	if m, err := metaOf(obj); err == nil {
		c.requeueOwned(m.GetUID())
	}
}

// deleteOwner requeues the groups of a Job or StatefulSet that is gone:
// a group waiting on its Job may now fail, and one told about its
// StatefulSet is told no more.
func (c *Controller) deleteOwner(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if m, err := metaOf(obj); err == nil {
		c.requeueOwned(m.GetUID())
	}
}

// updateJob requeues a Job's groups only when it starts or stops running:
// every other change of a Job (its counts of active and finished pods) is
// seen through the pods themselves.
func (c *Controller) updateJob(oldObj, newObj interface{}) {
	old, okOld := oldObj.(*batchv1.Job)
	job, okNew := newObj.(*batchv1.Job)
	if okOld && okNew && (old.UID != job.UID || jobEnded(old) != jobEnded(job)) {
		c.requeueOwned(job.UID)
	}
}

// updateStatefulSet requeues a StatefulSet's groups if its policy changed
// (kube-apiserver forbids it today; a later release may not).
func (c *Controller) updateStatefulSet(oldObj, newObj interface{}) {
	old, okOld := oldObj.(*appsv1.StatefulSet)
	sts, okNew := newObj.(*appsv1.StatefulSet)
	if okOld && okNew && old.Spec.PodManagementPolicy != sts.Spec.PodManagementPolicy {
		c.requeueOwned(sts.UID)
	}
}

func metaOf(obj interface{}) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}
