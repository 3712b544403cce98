package podgroup

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

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
//   - the annotations the controller reads (scheduling.PodAnnotationKeys),
//     and no other, even under scheduling.muster.dev/: the webhook bounds
//     their size (scheduling.MaxPodMusterAnnotationBytes), and an unknown
//     key would be a way round that bound;
//   - finalizers and schedulingGates, whole: the patches address them by
//     position;
//   - the controller reference, only if it names a batch/v1 Job or an
//     apps/v1 StatefulSet (owners.go): step 12 waits while a pod's Job
//     runs, step 6 warns of an OrderedReady StatefulSet; or of any kind
//     on a pod whose group is named after its instance, where the walk to
//     the instance's owner starts (instance.go);
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
// The affinity, tolerations, topology spread constraints and long Muster
// annotation values are interned: the pods of a gang usually carry the same
// ones, and each is kept once for all the pods that hold it, however many
// (a gang of 300 with a 32 KiB affinity costs one copy, not 300). Interned
// values are shared between cached pods, which no reader may modify (as
// for any informer cache). The webhook bounds their size at creation
// (scheduling.MaxPodSchedulingBytes).
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
			Annotations:                internAnnotations(readAnnotations(p.Annotations)),
			Finalizers:                 p.Finalizers,
			OwnerReferences:            keptOwners(p),
		},
		Spec: corev1.PodSpec{
			NodeName:                  p.Spec.NodeName,
			SchedulerName:             p.Spec.SchedulerName,
			SchedulingGates:           p.Spec.SchedulingGates,
			NodeSelector:              p.Spec.NodeSelector,
			Affinity:                  internAffinity(p.Spec.Affinity),
			Tolerations:               internSlice(&interned.tolerations, p.Spec.Tolerations),
			TopologySpreadConstraints: internSlice(&interned.spreads, p.Spec.TopologySpreadConstraints),
			Containers:                capacity.TrimContainers(p.Spec.Containers),
			InitContainers:            capacity.TrimContainers(p.Spec.InitContainers),
			Overhead:                  p.Spec.Overhead,
			Resources:                 p.Spec.Resources,
			Volumes:                   capacity.StorageVolumes(p.Spec.Volumes),
			ResourceClaims:            p.Spec.ResourceClaims,
			Priority:                  p.Spec.Priority,
			PreemptionPolicy:          p.Spec.PreemptionPolicy,
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

// readAnnotations keeps the entries of scheduling.PodAnnotationKeys.
func readAnnotations(m map[string]string) map[string]string {
	var out map[string]string
	for _, k := range scheduling.PodAnnotationKeys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// internMinString is the shortest annotation value that is interned: a
// shorter one costs less than its entry in the table.
const internMinString = 256

// interned holds the tables of TransformPod's shared values, one per type.
var interned struct {
	affinities  internTable[corev1.Affinity]
	tolerations internTable[corev1.Toleration]
	spreads     internTable[corev1.TopologySpreadConstraint]
	strings     internTable[byte]
}

// internTable maps the digest of a value's content to the one copy that
// cached pods share. It holds that copy weakly: once no cached pod holds it,
// the garbage collector frees it, and a later sweep drops its entry.
type internTable[T any] struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]weak.Pointer[T]
	// swept is the table's size after its last sweep; it sweeps again
	// once it has doubled, so sweeping costs O(1) per insert.
	swept int
}

// intern returns the shared copy of the value with digest key, or makes p
// (the start of a value just decoded) the shared copy.
func (t *internTable[T]) intern(key [sha256.Size]byte, p *T) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if wp, ok := t.entries[key]; ok {
		if v := wp.Value(); v != nil {
			return v
		}
	}
	if t.entries == nil {
		t.entries = map[[sha256.Size]byte]weak.Pointer[T]{}
	}
	t.entries[key] = weak.Make(p)
	if len(t.entries) > 2*t.swept+64 {
		for k, wp := range t.entries {
			if wp.Value() == nil {
				delete(t.entries, k)
			}
		}
		t.swept = len(t.entries)
	}
	return p
}

// size is the number of entries, live or not yet swept (tests).
func (t *internTable[T]) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// protoMarshaler is what the API types generate; its encoding is
// deterministic (map keys sorted), so equal values have equal digests.
type protoMarshaler interface{ Marshal() ([]byte, error) }

// digest writes v's encoding, length-prefixed, to h; it reports false if v
// cannot be encoded, and then is not interned.
func digest(h hash.Hash, v protoMarshaler) bool {
	b, err := v.Marshal()
	if err != nil {
		return false
	}
	_ = binary.Write(h, binary.LittleEndian, uint64(len(b)))
	_, _ = h.Write(b)
	return true
}

func internAffinity(a *corev1.Affinity) *corev1.Affinity {
	if a == nil {
		return nil
	}
	h := sha256.New()
	if !digest(h, a) {
		return a
	}
	return interned.affinities.intern([sha256.Size]byte(h.Sum(nil)), a)
}

// internSlice shares a slice by a weak pointer to its first element, from
// which the whole slice is rebuilt: the pointer keeps the backing array, and
// equal content has equal length.
func internSlice[T any, PT interface {
	*T
	protoMarshaler
}](t *internTable[T], s []T) []T {
	if len(s) == 0 {
		return s
	}
	h := sha256.New()
	for i := range s {
		if !digest(h, PT(&s[i])) {
			return s
		}
	}
	p := t.intern([sha256.Size]byte(h.Sum(nil)), &s[0])
	return unsafe.Slice(p, len(s))
}

// internAnnotations shares the long values of a pod's Muster annotations
// (a roles template is the same on every pod of a gang).
func internAnnotations(m map[string]string) map[string]string {
	for k, v := range m {
		if len(v) < internMinString {
			continue
		}
		p := interned.strings.intern(sha256.Sum256([]byte(v)), unsafe.StringData(v))
		m[k] = unsafe.String(p, len(v))
	}
	return m
}
