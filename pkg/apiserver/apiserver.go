package apiserver

import (
	"fmt"
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/registry/scheduling/pendingpodgroup"
	"github.com/muster-dev/muster/pkg/registry/scheduling/whatifreview"
)

// Config is the configuration of muster-apiserver.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	// PodCleanup puts the pod-cleanup finalizer on new PodGroups. Set it
	// only where the controller runs: in standalone mode, or with
	// --controller=false, nothing would remove it and no group could be
	// deleted.
	PodCleanup bool
	// Views serves the what-if and the queue (pkg/visibility): nil serves
	// neither resource (standalone mode, or --controller=false, where no
	// admission runs).
	Views *Views
}

// Views are the API's views of admission: whatifreviews and
// pendingpodgroups.
type Views struct {
	Reviews whatifreview.Answerer
	Limiter *whatifreview.Limiter
	Queue   pendingpodgroup.Reader
	// Filter marks forwarded requests in their context, innermost in the
	// handler chain.
	Filter func(http.Handler) http.Handler
}

// MusterServer is a running muster-apiserver.
type MusterServer struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	PodCleanup    bool
	Views         *Views
}

// CompletedConfig is a Config that Complete has filled in.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in the fields the generic server derives.
func (cfg *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{GenericConfig: cfg.GenericConfig.Complete(), PodCleanup: cfg.PodCleanup, Views: cfg.Views}}
}

// New builds the server and installs the scheduling.muster.dev group.
func (c completedConfig) New() (*MusterServer, error) {
	groupInfo, err := newAPIGroupInfo(c.GenericConfig.RESTOptionsGetter, c.PodCleanup, c.Views)
	if err != nil {
		return nil, err
	}
	// The handler chain is built by GenericConfig.New, and the filter needs
	// the serializer the group is installed with, so the group comes first.
	c.GenericConfig.BuildHandlerChainFunc = servedLikeCustomResources(c.GenericConfig.BuildHandlerChainFunc, scheduling.GroupName, groupInfo.NegotiatedSerializer)
	if v := c.Views; v != nil && v.Filter != nil {
		build := c.GenericConfig.BuildHandlerChainFunc
		c.GenericConfig.BuildHandlerChainFunc = func(h http.Handler, cfg *genericapiserver.Config) http.Handler {
			return build(v.Filter(h), cfg)
		}
	}
	generic, err := c.GenericConfig.New("muster-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating generic server: %w", err)
	}
	if err := generic.InstallAPIGroup(groupInfo); err != nil {
		return nil, fmt.Errorf("installing scheduling.muster.dev: %w", err)
	}
	return &MusterServer{GenericAPIServer: generic}, nil
}
