package capacity

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// PlacementPod returns a new pod with only what kube-scheduler's filters
// read of a pod to be placed:
//   - identity and every label (pod affinity and topology spread match
//     labels);
//   - node name, scheduler name, node selector, affinity, tolerations,
//     topology spread constraints: node and pod selection;
//   - containers' and init containers' resources, restart policy and host
//     ports, overhead and pod-level resources: NodeResourcesFit and
//     NodePorts;
//   - volumes that name storage (not configMaps, secrets, emptyDirs and
//     the like): the volume filters;
//   - resource claims and their statuses, and the claim of its extended
//     resources: DynamicResources, and preemption, which frees the devices
//     of its victims' claims (victimdevices.go);
//   - phase and the resized resources in the statuses;
//   - priority and creation time, which preemption orders victims by, and
//     the preemption policy (draining.go).
func PlacementPod(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              p.Name,
			Namespace:         p.Namespace,
			UID:               p.UID,
			Labels:            p.Labels,
			CreationTimestamp: p.CreationTimestamp,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			NodeName:                  p.Spec.NodeName,
			SchedulerName:             p.Spec.SchedulerName,
			NodeSelector:              p.Spec.NodeSelector,
			Affinity:                  p.Spec.Affinity,
			Tolerations:               p.Spec.Tolerations,
			TopologySpreadConstraints: p.Spec.TopologySpreadConstraints,
			Containers:                TrimContainers(p.Spec.Containers),
			InitContainers:            TrimContainers(p.Spec.InitContainers),
			Overhead:                  p.Spec.Overhead,
			Resources:                 p.Spec.Resources,
			Volumes:                   StorageVolumes(p.Spec.Volumes),
			ResourceClaims:            p.Spec.ResourceClaims,
			Priority:                  p.Spec.Priority,
			PreemptionPolicy:          p.Spec.PreemptionPolicy,
		},
		Status: corev1.PodStatus{
			Phase:                       p.Status.Phase,
			Resources:                   p.Status.Resources,
			AllocatedResources:          p.Status.AllocatedResources,
			ContainerStatuses:           TrimContainerStatuses(p.Status.ContainerStatuses),
			InitContainerStatuses:       TrimContainerStatuses(p.Status.InitContainerStatuses),
			ResourceClaimStatuses:       p.Status.ResourceClaimStatuses,
			ExtendedResourceClaimStatus: p.Status.ExtendedResourceClaimStatus,
		},
	}
}

// holderPod is the smaller copy of a pod that is not Muster's, which
// placement sees only as holding its node. Of its affinity only the
// required pod anti-affinity is kept: kube-scheduler's filters read no
// other term of a pod already placed (InterPodAffinity checks a pod's own
// affinity against the others' labels, and the others' required
// anti-affinity against it; preferred terms are for scoring, which
// placement does not run). Its node selection, tolerations and spread
// constraints constrain only its own placement, which is done. What a
// tenant's pods make Muster keep is bounded (docs/limits.md): labels to
// MaxUnmanagedLabelBytes, anti-affinity to MaxUnmanagedAntiAffinityBytes.
func holderPod(p *corev1.Pod) *corev1.Pod {
	out := PlacementPod(p)
	out.Labels = boundedLabels(p.Labels)
	out.Spec.NodeSelector, out.Spec.Tolerations, out.Spec.TopologySpreadConstraints = nil, nil, nil
	out.Spec.SchedulerName = ""
	out.Spec.Affinity = nil
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		out.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: boundedAntiAffinity(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution),
		}}
	}
	return out
}

// MaxUnmanagedLabelBytes bounds the labels kept of a pod that is not
// Muster's, keys and values together: placement matches gangs' pod
// (anti-)affinity and spread selectors against them. A label is at most
// 380 bytes (a 316-byte key, a 63-byte value), so 16 KiB keeps 43 labels
// of the longest and hundreds of the usual; past it, labels are kept in
// key order until the bound, the capacity-request label first.
const MaxUnmanagedLabelBytes = 16 << 10

// MaxUnmanagedAntiAffinityBytes bounds the required pod anti-affinity kept
// of a pod that is not Muster's, as a labelled pod's scheduling inputs are
// bounded (scheduling.MaxPodSchedulingBytes), in protobuf bytes.
const MaxUnmanagedAntiAffinityBytes = scheduling.MaxPodSchedulingBytes

// maxConservativeTopologyKeys bounds the terms that stand in for an
// anti-affinity past its bound: one per distinct topology key.
const maxConservativeTopologyKeys = 64

// boundedLabels returns labels, or the part of them that
// MaxUnmanagedLabelBytes keeps.
func boundedLabels(l map[string]string) map[string]string {
	total := 0
	for k, v := range l {
		total += len(k) + len(v)
	}
	if total <= MaxUnmanagedLabelBytes {
		return l
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		if k != scheduling.CapacityRequestLabel {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if _, ok := l[scheduling.CapacityRequestLabel]; ok {
		keys = append([]string{scheduling.CapacityRequestLabel}, keys...)
	}
	out := map[string]string{}
	left := MaxUnmanagedLabelBytes
	for _, k := range keys {
		if n := len(k) + len(l[k]); n <= left {
			out[k] = l[k]
			left -= n
		}
	}
	return out
}

// boundedAntiAffinity returns terms, or past MaxUnmanagedAntiAffinityBytes
// terms that refuse at least what they refuse: for each of their topology
// keys, every pod of every namespace. Placement then never puts a gang's
// pod where kube-scheduler's own check of these terms would refuse it; a
// pod with such terms takes from gangs no more than terms of that breadth
// within the bound would, which any pod may carry.
func boundedAntiAffinity(terms []corev1.PodAffinityTerm) []corev1.PodAffinityTerm {
	size := 0
	for i := range terms {
		size += terms[i].Size()
	}
	if size <= MaxUnmanagedAntiAffinityBytes {
		return terms
	}
	var out []corev1.PodAffinityTerm
	seen := map[string]bool{}
	for _, t := range terms {
		if seen[t.TopologyKey] || len(out) == maxConservativeTopologyKeys {
			continue
		}
		seen[t.TopologyKey] = true
		out = append(out, corev1.PodAffinityTerm{
			LabelSelector:     &metav1.LabelSelector{},
			NamespaceSelector: &metav1.LabelSelector{},
			TopologyKey:       t.TopologyKey,
		})
	}
	return out
}

// TrimContainers keeps what a container's requests and host ports are
// computed from.
func TrimContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				out[i].Ports = append(out[i].Ports, corev1.ContainerPort{HostPort: port.HostPort, HostIP: port.HostIP, Protocol: port.Protocol, ContainerPort: port.ContainerPort})
			}
		}
	}
	return out
}

// TrimContainerStatuses keeps what a resized container's requests are
// computed from.
func TrimContainerStatuses(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if cs == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(cs))
	for i, c := range cs {
		out[i] = corev1.ContainerStatus{Name: c.Name, Resources: c.Resources, AllocatedResources: c.AllocatedResources}
	}
	return out
}

// StorageVolumes keeps the volumes that the volume filters read: those
// that name storage. ConfigMaps, secrets, emptyDirs, downward API,
// projected, host path and image volumes constrain no placement.
func StorageVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		src := v.VolumeSource
		if src.ConfigMap != nil || src.Secret != nil || src.EmptyDir != nil || src.DownwardAPI != nil ||
			src.Projected != nil || src.HostPath != nil || src.Image != nil {
			continue
		}
		out = append(out, v)
	}
	return out
}

// holderInfo is the scheduler's PodInfo of a pod that is not Muster's. Its
// requests are computed once and cached in the PodInfo, which is all the
// NodeInfo reads of them, so the pod keeps of its containers only their
// host ports: what each such pod costs in memory is mostly the pod struct.
func holderInfo(p *corev1.Pod) fwk.PodInfo {
	h := holderPod(p)
	pi := newPodInfo(h)
	pi.CalculateResource()
	var ports []corev1.Container
	for _, c := range append(h.Spec.InitContainers, h.Spec.Containers...) {
		if len(c.Ports) > 0 {
			ports = append(ports, corev1.Container{Name: c.Name, Ports: c.Ports})
		}
	}
	h.Spec.Containers, h.Spec.InitContainers, h.Spec.Overhead, h.Spec.Resources = ports, nil, nil, nil
	h.Status = corev1.PodStatus{Phase: h.Status.Phase, ResourceClaimStatuses: h.Status.ResourceClaimStatuses,
		ExtendedResourceClaimStatus: h.Status.ExtendedResourceClaimStatus}
	return pi
}
