// Package quota enforces ResourceQuota object counts on Muster's resources
// (count/podgroups.scheduling.muster.dev, count/workloads.scheduling.muster.dev),
// with k8s.io/apiserver's ResourceQuota admission plugin, as kube-apiserver
// enforces them on its own resources. A user who may create pods can make
// the controller create PodGroups from pod annotations; a quota on
// count/podgroups bounds how many, for users and the controller alike.
//
// Admission checks a create against each matching quota's status.hard and
// status.used and records the new usage in the quota's status; the cluster's
// resource quota controller (kube-controller-manager) fills status.hard and
// recounts usage, for aggregated resources too, from discovery.
package quota

import (
	"context"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	resourcequotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// PluginName is the plugin's name, as in kube-apiserver.
const PluginName = resourcequota.PluginName

// evaluatorWorkers is how many quota evaluations run at once, as
// kube-apiserver's default.
const evaluatorWorkers = 5

// Register adds the ResourceQuota plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return resourcequota.NewResourceQuota(&resourcequotaapi.Configuration{}, evaluatorWorkers)
	})
}

// Initializer gives the plugin its quota configuration: object-count
// evaluators for PodGroups and Workloads. The generic initializer gives it
// the kube client and the ResourceQuota informer.
type Initializer struct {
	Configuration quotav1.Configuration
}

var _ admission.PluginInitializer = Initializer{}

// Initialize sets the configuration on a plugin that wants one.
func (i Initializer) Initialize(p admission.Interface) {
	if wants, ok := p.(initializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(i.Configuration)
	}
}

// Configuration counts PodGroups and Workloads, listing them through
// client (the server's loopback) when usage is recomputed.
func Configuration(client versioned.Interface) quotav1.Configuration {
	podGroups := schema.GroupResource{Group: scheduling.GroupName, Resource: "podgroups"}
	workloads := schema.GroupResource{Group: scheduling.GroupName, Resource: "workloads"}
	return generic.NewConfiguration([]quotav1.Evaluator{
		generic.NewObjectCountEvaluator(podGroups, func(namespace string) ([]runtime.Object, error) {
			l, err := client.SchedulingV1alpha1().PodGroups(namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return meta.ExtractList(l)
		}, ""),
		generic.NewObjectCountEvaluator(workloads, func(namespace string) ([]runtime.Object, error) {
			l, err := client.SchedulingV1alpha1().Workloads(namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return meta.ExtractList(l)
		}, ""),
	}, nil)
}
