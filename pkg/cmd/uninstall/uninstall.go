// Package uninstall is muster-apiserver's uninstall mode, `muster-apiserver
// uninstall`: it takes Muster out of a cluster's admission path and releases
// every pod it still holds, so that deleting the rest of the install leaves
// no pod with Muster's scheduling gate or tracking finalizer. The chart's
// pre-delete hook runs it before `helm uninstall` deletes anything.
package uninstall

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Options say which install to take apart.
type Options struct {
	// Namespace is where muster-apiserver runs.
	Namespace string
	// Deployment names muster-apiserver's Deployment in Namespace.
	Deployment string
	// ServerSelector selects muster-apiserver's pods in Namespace: the
	// uninstall waits until none is left.
	ServerSelector string
	// StopTimeout bounds the wait for the servers to stop.
	StopTimeout time.Duration
	// PollInterval is how often that wait looks again.
	PollInterval time.Duration
}

// DefaultOptions are those of the chart's default install.
func DefaultOptions() Options {
	return Options{
		Namespace:      scheduling.DefaultServerNamespace,
		Deployment:     "muster-apiserver",
		ServerSelector: "app.kubernetes.io/name=muster-apiserver",
		StopTimeout:    2 * time.Minute,
		PollInterval:   time.Second,
	}
}

// Run uninstalls in an order that leaves no pod held:
//  1. The pod webhooks and Muster's admission policies go first, so that no
//     new pod is gated while the rest happens.
//  2. The APIService goes, so that API discovery (and with it namespace
//     deletion and the garbage collector) never waits on an API that is
//     about to disappear; then the Deployment, and Run waits until no
//     replica runs, since a running controller would put its finalizer
//     back on the pods that step 3 releases.
//  3. Every pod that still carries the gate or the finalizer loses both, in
//     one patch each; a gated pod is then scheduled like any other pod,
//     with no gang guarantee. The capacity-request pods Muster created for
//     autoscalers are deleted: their owner, a PodGroup, goes with the API
//     that serves it, so the garbage collector would never remove them.
//
// The rest of the install (RBAC, the PriorityClass, the namespace with its
// etcd) is left to whoever runs this: helm deletes it after the hook.
func Run(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, o Options) error {
	logger := klog.FromContext(ctx)
	logger.Info("Removing the pod webhooks and Muster's admission policies")
	if err := removeAdmission(ctx, kube, dyn); err != nil {
		return err
	}
	logger.Info("Removing the APIService and stopping muster-apiserver", "namespace", o.Namespace, "deployment", o.Deployment)
	if err := removeAPIService(ctx, dyn); err != nil {
		return err
	}
	if err := stopServers(ctx, kube, o); err != nil {
		return err
	}
	logger.Info("Releasing every pod Muster still holds")
	released, err := releasePods(ctx, kube)
	if err != nil {
		return err
	}
	deleted, err := deleteCapacityRequests(ctx, kube)
	if err != nil {
		return err
	}
	logger.Info("Muster no longer holds any pod", "released", released, "capacityRequestsDeleted", deleted)
	return nil
}

// validate checks the options before anything is deleted.
func (o Options) validate() error {
	switch {
	case o.Namespace == "":
		return fmt.Errorf("--namespace is required")
	case o.Deployment == "":
		return fmt.Errorf("--deployment is required")
	case o.ServerSelector == "":
		return fmt.Errorf("--server-selector is required")
	case o.StopTimeout <= 0:
		return fmt.Errorf("--stop-timeout must be positive")
	}
	return nil
}
