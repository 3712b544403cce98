package capacity

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resources is an amount of each resource the scheduler's fit check counts:
// cpu in millicores, memory and ephemeral storage in bytes, and extended
// resources (hugepages, devices) in their own units. It is small on purpose:
// one is kept for every pod that holds capacity.
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// Scalar holds extended resources, sorted by name; nil for most pods.
	Scalar []Scalar
}

// Scalar is an amount of one extended resource.
type Scalar struct {
	Name  corev1.ResourceName
	Value int64
}

// ResourcesFromList converts a ResourceList into Resources.
func ResourcesFromList(l corev1.ResourceList) Resources {
	var r Resources
	for name, q := range l {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage = q.Value()
		case corev1.ResourcePods:
			// Counted apart: every pod takes one.
		default:
			if isScalar(name) && !q.IsZero() {
				r.Scalar = append(r.Scalar, Scalar{Name: name, Value: q.Value()})
			}
		}
	}
	slices.SortFunc(r.Scalar, func(a, b Scalar) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return r
}

// isScalar reports whether the scheduler counts a resource as a scalar:
// hugepages, and extended resources such as example.com/gpu.
func isScalar(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.Contains(string(name), "/")
}

// PodRequests returns a pod's effective requests as the scheduler computes
// them: the larger of the containers' sum and each init container's (with
// restartable sidecars added), pod-level resources when set, and overhead.
// Bound pods count resources from their status too, as the scheduler does
// for pods resized in place.
func PodRequests(p *corev1.Pod) Resources {
	return ResourcesFromList(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{
		UseStatusResources: p.Spec.NodeName != "",
	}))
}

// List converts r back into a ResourceList.
func (r Resources) List() corev1.ResourceList {
	l := corev1.ResourceList{}
	if r.MilliCPU != 0 {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI)
	}
	if r.Memory != 0 {
		l[corev1.ResourceMemory] = *resource.NewQuantity(r.Memory, resource.BinarySI)
	}
	if r.EphemeralStorage != 0 {
		l[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(r.EphemeralStorage, resource.BinarySI)
	}
	for _, s := range r.Scalar {
		l[s.Name] = *resource.NewQuantity(s.Value, resource.DecimalSI)
	}
	return l
}

// Add adds o to r.
func (r *Resources) Add(o Resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	for _, s := range o.Scalar {
		r.addScalar(s.Name, s.Value)
	}
}

// Sub takes o from r.
func (r *Resources) Sub(o Resources) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	for _, s := range o.Scalar {
		r.addScalar(s.Name, -s.Value)
	}
}

func (r *Resources) addScalar(name corev1.ResourceName, v int64) {
	i, found := slices.BinarySearchFunc(r.Scalar, name, func(s Scalar, n corev1.ResourceName) int {
		return strings.Compare(string(s.Name), string(n))
	})
	if found {
		r.Scalar[i].Value += v
		return
	}
	r.Scalar = slices.Insert(r.Scalar, i, Scalar{Name: name, Value: v})
}

// ScalarValue returns the amount of one extended resource.
func (r *Resources) ScalarValue(name corev1.ResourceName) int64 {
	for _, s := range r.Scalar {
		if s.Name == name {
			return s.Value
		}
	}
	return 0
}

// Clone returns a copy that shares nothing with r.
func (r Resources) Clone() Resources {
	r.Scalar = slices.Clone(r.Scalar)
	return r
}

// String renders the non-zero amounts, e.g. "cpu 10, memory 1Gi".
func (r Resources) String() string {
	var parts []string
	if r.MilliCPU != 0 {
		parts = append(parts, "cpu "+formatMilli(r.MilliCPU))
	}
	if r.Memory != 0 {
		parts = append(parts, "memory "+formatBytes(r.Memory))
	}
	if r.EphemeralStorage != 0 {
		parts = append(parts, "ephemeral-storage "+formatBytes(r.EphemeralStorage))
	}
	for _, s := range r.Scalar {
		parts = append(parts, fmt.Sprintf("%s %d", s.Name, s.Value))
	}
	if len(parts) == 0 {
		return "no resources"
	}
	return strings.Join(parts, ", ")
}

func formatMilli(m int64) string {
	if m%1000 == 0 {
		return fmt.Sprint(m / 1000)
	}
	return fmt.Sprintf("%dm", m)
}

func formatBytes(b int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if b != 0 && b%u.size == 0 {
			return fmt.Sprintf("%d%s", b/u.size, u.suffix)
		}
	}
	return fmt.Sprint(b)
}
