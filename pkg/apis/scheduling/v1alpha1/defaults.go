package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// Muster's types have no static defaults: a PodGroup's policy defaults from
// its Workload template, which needs a lookup and so lives in admission.
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}
