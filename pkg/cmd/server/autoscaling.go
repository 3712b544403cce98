package server

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/podgroup"
)

// newRequester builds what --autoscaling asks for: nil with off, or with
// count admission, which places nothing and so never knows what does not
// fit. auto is resolved once, when the controller starts leading.
func (o *ControllerOptions) newRequester(ctx context.Context, kube kubernetes.Interface, _ *rest.Config) (autoscaling.Requester, error) {
	if o.Admission != podgroup.AdmissionCapacity || o.Autoscaling == podgroup.AutoscalingOff {
		return nil, nil
	}
	klog.FromContext(ctx).Info("Gangs that do not fit ask the autoscaler for room", "autoscaling", o.Autoscaling, "requests", autoscaling.KindPods)
	return autoscaling.NewPods(kube, o.PatchConcurrency), nil
}
