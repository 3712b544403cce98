package autoscaling

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// CapacityRequestTemplate is the capacity-request pod that stands for p, a
// pod of group: what kube-scheduler and an autoscaler need to find p a
// node, and nothing that runs.
//
//   - The scheduling constraints are p's: node selector, affinity,
//     tolerations, topology spread, scheduler and runtime class, and its
//     host ports, on the one container.
//   - Its requests are p's effective requests (its containers', init
//     containers' and pod-level resources, as kube-scheduler counts them),
//     with limits equal to them, as extended resources require.
//   - Its labels are p's, so that the gang's own affinity and spread terms
//     see the capacity-request pods as they will see the gang, less
//     Muster's group and managed labels (it is never gated nor counted),
//     plus CapacityRequestLabel.
//   - It has the lowest priority (CapacityRequestPriorityClass, which also
//     says preemptionPolicy Never), a pause container that meets the
//     "restricted" Pod Security Standard, no service account token, no
//     volumes, a grace period of 0, and the autoscalers' do-not-disrupt
//     annotations.
//
// Not carried over: volumes (their topology), DRA claims and host
// networking. A gang that needs them may be given nodes that do not suit
// it; docs/controller.md lists this among the limits.
func CapacityRequestTemplate(p *corev1.Pod, group, image string) corev1.PodTemplateSpec {
	labels := maps.Clone(p.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	delete(labels, scheduling.PodGroupLabel)
	delete(labels, scheduling.ManagedLabel)
	labels[scheduling.CapacityRequestLabel] = group

	requests := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})
	var resources corev1.ResourceRequirements
	if len(requests) > 0 {
		resources = corev1.ResourceRequirements{Requests: requests, Limits: requests.DeepCopy()}
	}
	var ports []corev1.ContainerPort
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					ports = append(ports, corev1.ContainerPort{
						ContainerPort: port.HostPort, HostPort: port.HostPort, HostIP: port.HostIP, Protocol: port.Protocol,
					})
				}
			}
		}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: labels,
			Annotations: map[string]string{
				scheduling.KarpenterDoNotDisrupt:        "true",
				scheduling.ClusterAutoscalerSafeToEvict: "false",
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:      scheduling.CapacityRequestContainer,
				Image:     image,
				Resources: resources,
				Ports:     ports,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			// The "restricted" Pod Security Standard, so that a namespace
			// that enforces it admits the pod.
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65535),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			NodeSelector:                  maps.Clone(p.Spec.NodeSelector),
			Affinity:                      p.Spec.Affinity.DeepCopy(),
			Tolerations:                   append([]corev1.Toleration(nil), p.Spec.Tolerations...),
			TopologySpreadConstraints:     append([]corev1.TopologySpreadConstraint(nil), p.Spec.TopologySpreadConstraints...),
			SchedulerName:                 p.Spec.SchedulerName,
			RuntimeClassName:              p.Spec.RuntimeClassName,
			PriorityClassName:             scheduling.CapacityRequestPriorityClass,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
		},
	}
}

// PodSets groups the capacity-request pods of a gang's pods by identical
// template, in the order their first pod comes, and returns them with
// their hash.
// A pod given more than once (the template of a role's pods not yet
// created) is built once.
func PodSets(pods []*corev1.Pod, group, image string) ([]PodSet, string) {
	var sets []PodSet
	seen := map[*corev1.Pod]int{}
	for _, p := range pods {
		if i, ok := seen[p]; ok {
			sets[i].Count++
			continue
		}
		t := CapacityRequestTemplate(p, group, image)
		found := false
		for i := range sets {
			if equality.Semantic.DeepEqual(sets[i].Template, t) {
				sets[i].Count++
				seen[p] = i
				found = true
				break
			}
		}
		if !found {
			seen[p] = len(sets)
			sets = append(sets, PodSet{Template: t, Count: 1})
		}
	}
	return sets, hashPodSets(sets)
}

// hashPodSets is a short digest of sets, which names what a request was
// made for.
func hashPodSets(sets []PodSet) string {
	b, _ := json.Marshal(sets) // plain structs: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}

// OwnerReference is the reference that makes what a request creates go
// with its group: the PodGroup controls it, so no framework's controller
// adopts a capacity-request pod whose labels its selector matches.
func OwnerReference(d Demand) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: scheduling.GroupName + "/v1alpha1",
		Kind:       "PodGroup",
		Name:       d.Name,
		UID:        d.UID,
		Controller: ptr.To(true),
	}
}

// ownerUID is the UID of the PodGroup that controls obj, if one does.
func ownerUID(obj metav1.Object) types.UID {
	if r := metav1.GetControllerOfNoCopy(obj); r != nil && r.Kind == "PodGroup" {
		return r.UID
	}
	return ""
}

// InOneDomain makes the capacity-request pods of sets share one domain of
// key, a node label such as topology.kubernetes.io/zone, as the gang they
// stand for must (its spec.schedulingConstraints.topology): each gets a
// required pod affinity term, on key, to the group's capacity-request
// pods. kube-scheduler, Karpenter and cluster-autoscaler all honour it, so
// that the nodes added for the gang are added in one domain. It returns
// the sets and their new hash.
func InOneDomain(sets []PodSet, group, key string) ([]PodSet, string) {
	term := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{scheduling.CapacityRequestLabel: group}},
		TopologyKey:   key,
	}
	for i := range sets {
		spec := &sets[i].Template.Spec
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		if spec.Affinity.PodAffinity == nil {
			spec.Affinity.PodAffinity = &corev1.PodAffinity{}
		}
		a := spec.Affinity.PodAffinity
		a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, term)
	}
	return sets, hashPodSets(sets)
}
