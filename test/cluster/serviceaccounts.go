package cluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// runDefaultServiceAccounts creates the "default" ServiceAccount in every
// namespace until ctx ends. The harness runs no kube-controller-manager,
// whose job this is, and the ServiceAccount admission plugin rejects pods
// whose service account does not exist.
func (c *Cluster) runDefaultServiceAccounts(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(c.Client, 10*time.Minute)
	namespaces := factory.Core().V1().Namespaces().Informer()
	ensure := func(obj any) {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || ns.DeletionTimestamp != nil {
			return
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
		_, err := c.Client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Creating default service account", "namespace", ns.Name)
		}
	}
	if _, err := namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: ensure}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	return nil
}
