package workloadref

import "k8s.io/apiserver/pkg/admission"

// Initializer hands the WorkloadGetter to plugins that want it.
type Initializer struct {
	Workloads WorkloadGetter
}

var _ admission.PluginInitializer = Initializer{}

// Initialize injects the getter into plugins that implement WantsWorkloadGetter.
func (i Initializer) Initialize(plugin admission.Interface) {
	if w, ok := plugin.(WantsWorkloadGetter); ok {
		w.SetWorkloadGetter(i.Workloads)
	}
}
