// Package scheduling holds what the storage of every kind of
// scheduling.muster.dev shares; each kind's storage and strategies live in
// the package named after its resource.
package scheduling

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// MainResetFields are the fields a write to a kind's main resource never
// sets: its status, which only the status subresource writes.
func MainResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// StatusResetFields are the fields a write to a status subresource never
// sets: the spec, and the metadata that metav1.ResetObjectMetaForStatus
// restores.
func StatusResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("metadata", "annotations"),
			fieldpath.MakePathOrDie("metadata", "finalizers"),
			fieldpath.MakePathOrDie("metadata", "ownerReferences"),
		),
	}
}
