package scheduling

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// GroupKey names one PodGroup. It is the key of everything the controller
// keeps per group (its workqueue, its pod index, its memory, the capacity
// tracker's records), so that a group's own events and its pods' events
// meet on one key, and a key can never be confused with a pod's or a node's
// name. NewGroupKey is the one way to build one.
//
// +k8s:deepcopy-gen=false
type GroupKey struct {
	Namespace, Name string
}

// NewGroupKey is the key of the group name in namespace.
func NewGroupKey(namespace, name string) GroupKey {
	return GroupKey{Namespace: namespace, Name: name}
}

// GroupKeyOf is the key of the group a pod is labelled for (PodGroupLabel),
// if any.
func GroupKeyOf(p *corev1.Pod) (GroupKey, bool) {
	name := p.Labels[PodGroupLabel]
	if name == "" {
		return GroupKey{}, false
	}
	return NewGroupKey(p.Namespace, name), true
}

// ParseGroupKey reads a key as String writes it: "namespace/name".
func ParseGroupKey(s string) (GroupKey, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return GroupKey{}, fmt.Errorf("%q is not a PodGroup key (namespace/name)", s)
	}
	return NewGroupKey(ns, name), nil
}

// String is "namespace/name", the format of cache.MetaNamespaceKeyFunc, for
// logs, index values and status messages: like it, a key without a
// namespace is its name alone.
func (k GroupKey) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// MarshalLog logs a key as String does (logr.Marshaler), so that structured
// logs show "namespace/name" and not a struct.
func (k GroupKey) MarshalLog() any {
	return k.String()
}
