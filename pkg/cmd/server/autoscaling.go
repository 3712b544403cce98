package server

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/podgroup"
)

// newRequester builds what --autoscaling asks for: nil with off, or with
// count admission, which places nothing and so never knows what does not
// fit. auto is resolved once, when the controller starts leading: a
// ProvisioningRequest where the cluster serves the API, else
// capacity-request pods where it serves Karpenter's NodePools, else
// nothing: on a cluster that no autoscaler grows, capacity-request pods
// would only hold room that smaller gangs could use.
func (o *ControllerOptions) newRequester(ctx context.Context, kube kubernetes.Interface, kcfg *rest.Config) (autoscaling.Requester, error) {
	if o.Admission != podgroup.AdmissionCapacity || o.Autoscaling == podgroup.AutoscalingOff {
		return nil, nil
	}
	var kind string
	// Discovery fails while kube-apiserver restarts: retry, rather than run
	// without the kind asked for, until it answers or leading ends.
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(context.Context) (bool, error) {
		k, served, err := requesterKind(o.Autoscaling, kube.Discovery())
		if err != nil {
			klog.FromContext(ctx).Error(err, "Cannot tell which autoscaling requests to make; retrying")
			return false, nil
		}
		if !served {
			return false, fmt.Errorf("--autoscaling=%s, but the cluster does not serve %s", o.Autoscaling, provisioningRequestsAPI)
		}
		kind = k
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if kind == "" {
		klog.FromContext(ctx).Info("No autoscaler found (neither "+provisioningRequestsAPI+" nor Karpenter's NodePools are served): gangs that do not fit ask for no room; "+
			"set --autoscaling=pods where an autoscaler Muster cannot see provisions for unschedulable pods", "autoscaling", o.Autoscaling)
		return nil, nil
	}
	klog.FromContext(ctx).Info("Gangs that do not fit ask the autoscaler for room", "autoscaling", o.Autoscaling, "requests", kind)
	if kind == autoscaling.KindPods {
		return autoscaling.NewPods(kube, o.PatchConcurrency), nil
	}
	dyn, err := dynamic.NewForConfig(kcfg)
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	return autoscaling.NewProvisioningRequests(kube, dyn), nil
}

// provisioningRequestsAPI names the ProvisioningRequest API in messages.
var provisioningRequestsAPI = autoscaling.ProvisioningRequestResource.GroupVersion().String() + " " + autoscaling.ProvisioningRequestResource.Resource

// requesterKind is the kind of Requester --autoscaling (not off) asks for,
// "" for none (auto, with no autoscaler found); served is false where it
// asks for ProvisioningRequests explicitly and the cluster does not serve
// them, so that they could never be made.
func requesterKind(mode string, disc discovery.DiscoveryInterface) (kind string, served bool, err error) {
	if mode == podgroup.AutoscalingPods {
		return autoscaling.KindPods, true, nil
	}
	served, err = autoscaling.ProvisioningRequestsServed(disc)
	if err != nil {
		return "", false, err
	}
	switch {
	case served:
		return autoscaling.KindProvisioningRequest, true, nil
	case mode == podgroup.AutoscalingProvisioningRequest:
		return "", false, nil
	}
	karpenter, err := autoscaling.KarpenterServed(disc)
	if err != nil {
		return "", false, err
	}
	if karpenter {
		return autoscaling.KindPods, true, nil
	}
	return "", true, nil // auto, and no autoscaler to ask
}
