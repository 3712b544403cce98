package server

import (
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/admission/quota"
	"github.com/muster-dev/muster/pkg/admission/workloadref"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// registerAdmission adds Muster's admission plugin to the generic admission
// options, after the recommended plugins, and ResourceQuota last, as
// kube-apiserver orders it: a request is counted against quota only once
// every other plugin has admitted it.
func registerAdmission(o *genericoptions.AdmissionOptions) {
	workloadref.Register(o.Plugins)
	quota.Register(o.Plugins)
	o.RecommendedPluginOrder = append(o.RecommendedPluginOrder, workloadref.PluginName, quota.PluginName)
}

// admissionInitializer gives Muster's admission plugins what they read: the
// server's Workloads, and the quota evaluators of PodGroups and Workloads,
// through its loopback client. Both the delegated
// admission chain and standalone mode's lone plugin are initialized with it.
func admissionInitializer(loopback *rest.Config) (admission.PluginInitializer, error) {
	client, err := versioned.NewForConfig(loopback)
	if err != nil {
		return nil, fmt.Errorf("creating loopback client: %w", err)
	}
	return admission.PluginInitializers{
		workloadref.Initializer{Workloads: workloadref.NewClientGetter(client)},
		quota.Initializer{Configuration: quota.Configuration(client)},
	}, nil
}

// standaloneAdmission builds Muster's admission plugin on its own, for
// standalone mode, which runs no other plugin.
func standaloneAdmission(loopback *rest.Config) (admission.Interface, error) {
	init, err := admissionInitializer(loopback)
	if err != nil {
		return nil, err
	}
	plugin := workloadref.New()
	init.Initialize(plugin)
	if err := plugin.ValidateInitialization(); err != nil {
		return nil, err
	}
	return plugin, nil
}
