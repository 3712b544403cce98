package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/registry/scheduling/pendingpodgroup"
	"github.com/muster-dev/muster/pkg/registry/scheduling/podgroup"
	"github.com/muster-dev/muster/pkg/registry/scheduling/whatifreview"
	"github.com/muster-dev/muster/pkg/registry/scheduling/workload"
)

// newAPIGroupInfo returns the resources of scheduling.muster.dev/v1alpha1,
// each with a status subresource that RBAC authorizes on its own.
func newAPIGroupInfo(optsGetter generic.RESTOptionsGetter, podCleanup bool, views *Views) (*genericapiserver.APIGroupInfo, error) {
	info := genericapiserver.NewDefaultAPIGroupInfo(scheduling.GroupName, Scheme, metav1.ParameterCodec, Codecs)

	podGroups, podGroupStatus, err := podgroup.NewStorage(Scheme, optsGetter, podCleanup)
	if err != nil {
		return nil, fmt.Errorf("podgroups storage: %w", err)
	}
	workloads, workloadStatus, err := workload.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, fmt.Errorf("workloads storage: %w", err)
	}
	storage := map[string]rest.Storage{
		"podgroups":        podGroups,
		"podgroups/status": podGroupStatus,
		"workloads":        workloads,
		"workloads/status": workloadStatus,
	}
	// The views of admission, computed at request time and never stored.
	if views != nil {
		storage["whatifreviews"] = whatifreview.NewREST(Scheme, views.Reviews, views.Limiter)
		storage["pendingpodgroups"] = pendingpodgroup.NewREST(Scheme, views.Queue)
	}
	info.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = storage
	return &info, nil
}
