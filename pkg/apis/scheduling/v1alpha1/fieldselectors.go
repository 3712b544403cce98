package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Field selectors served besides metadata.name and metadata.namespace. The
// registry's GetAttrs sets the same keys.
const (
	PodGroupWorkloadNameField = "spec.workloadRef.workloadName"
	PodGroupPhaseField        = "status.phase"
)

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	if err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("PodGroup"),
		allowFields("metadata.name", "metadata.namespace", PodGroupWorkloadNameField, PodGroupPhaseField)); err != nil {
		return err
	}
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("Workload"),
		allowFields("metadata.name", "metadata.namespace"))
}

// allowFields returns a field label conversion that passes the given labels
// through unchanged and rejects every other.
func allowFields(allowed ...string) runtime.FieldLabelConversionFunc {
	return func(label, value string) (string, string, error) {
		for _, a := range allowed {
			if label == a {
				return label, value, nil
			}
		}
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
}
