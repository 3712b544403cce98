package podgroup

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// musterPrefix is the prefix of every label and annotation Muster reads.
const musterPrefix = scheduling.GroupName + "/"

// TransformPod is the pod informer's transform: it keeps only what the
// controller and capacity-aware admission read, so that a user who can
// create pods cannot make Muster's cache hold their environment, commands,
// volumes, container statuses or unrelated labels and annotations. It
// builds a new pod rather than deleting known-big fields, so that a field
// a new Kubernetes release adds is dropped too. What is kept, and who reads
// it:
//
//   - identity (name, namespace, UID, resourceVersion, creation and
//     deletion times): the index, events, and the UID and resourceVersion
//     tests of every patch;
//   - annotations under scheduling.muster.dev/: the min-count, roles and
//     roles-template annotations;
//   - finalizers and schedulingGates, whole: the patches address them by
//     position;
//   - the controller reference, only if it names a batch/v1 Job or an
//     apps/v1 StatefulSet (owners.go): step 12 waits while a pod's Job
//     runs, step 6 warns of an OrderedReady StatefulSet;
//   - every label, nodeName, schedulerName, nodeSelector, affinity (whole,
//     since the pin patch may replace it), tolerations, topology spread
//     constraints, containers' and init containers' names, resources,
//     restart policy and host ports, overhead, pod-level resources, the
//     volumes that name storage and the resource claims: placement, which
//     runs kube-scheduler's filters on them (capacity.PlacementPod);
//   - phase, conditions, resource claim statuses, and the resources and
//     allocated resources in the pod's and its containers' statuses:
//     readiness, the scheduler's Unschedulable, the claims made from
//     templates, and the requests of a pod resized in place.
//
// It is idempotent, and a tombstone never reaches it (client-go transforms
// only objects, not DeletedFinalStateUnknown).
func TransformPod(obj interface{}) (interface{}, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:                       p.Name,
			Namespace:                  p.Namespace,
			UID:                        p.UID,
			ResourceVersion:            p.ResourceVersion,
			Generation:                 p.Generation,
			CreationTimestamp:          p.CreationTimestamp,
			DeletionTimestamp:          p.DeletionTimestamp,
			DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds,
			Labels:                     p.Labels,
			Annotations:                musterKeys(p.Annotations),
			Finalizers:                 p.Finalizers,
			OwnerReferences:            keptOwners(p),
		},
		Spec: corev1.PodSpec{
			NodeName:                  p.Spec.NodeName,
			SchedulerName:             p.Spec.SchedulerName,
			SchedulingGates:           p.Spec.SchedulingGates,
			NodeSelector:              p.Spec.NodeSelector,
			Affinity:                  p.Spec.Affinity,
			Tolerations:               p.Spec.Tolerations,
			TopologySpreadConstraints: p.Spec.TopologySpreadConstraints,
			Containers:                capacity.TrimContainers(p.Spec.Containers),
			InitContainers:            capacity.TrimContainers(p.Spec.InitContainers),
			Overhead:                  p.Spec.Overhead,
			Resources:                 p.Spec.Resources,
			Volumes:                   capacity.StorageVolumes(p.Spec.Volumes),
			ResourceClaims:            p.Spec.ResourceClaims,
		},
		Status: corev1.PodStatus{
			Phase:                 p.Status.Phase,
			Conditions:            p.Status.Conditions,
			Resources:             p.Status.Resources,
			AllocatedResources:    p.Status.AllocatedResources,
			ContainerStatuses:     capacity.TrimContainerStatuses(p.Status.ContainerStatuses),
			InitContainerStatuses: capacity.TrimContainerStatuses(p.Status.InitContainerStatuses),
			ResourceClaimStatuses: p.Status.ResourceClaimStatuses,
		},
	}, nil
}

// musterKeys keeps the entries of a label or annotation map whose key is
// under scheduling.muster.dev/.
func musterKeys(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if strings.HasPrefix(k, musterPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
