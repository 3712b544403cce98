package uninstall

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/manifests"
)

// policyPrefix starts the name of every admission policy and binding Muster
// installs, today's and any an older release installed.
const policyPrefix = "muster-"

// apiServiceResource is the aggregator's APIService, read through the
// dynamic client: Muster has no typed aggregator client.
var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// APIServiceName is Muster's APIService.
var APIServiceName = v1alpha1.SchemeGroupVersion.Version + "." + v1alpha1.SchemeGroupVersion.Group

// policyResources are the admission policy kinds Muster installs, bindings
// before their policies. They are read through the dynamic client, so that
// a kind the cluster does not serve is simply not found.
var policyResources = []schema.GroupVersionResource{
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"},
}

// removeAdmission deletes the pod webhooks, then every admission policy and
// binding whose name starts with "muster-". A kind the cluster does not
// serve (MutatingAdmissionPolicy before 1.36) is skipped.
func removeAdmission(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface) error {
	ar := kube.AdmissionregistrationV1()
	if err := ignoreNotFound(ar.MutatingWebhookConfigurations().Delete(ctx, manifests.ConfigurationName, metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", manifests.ConfigurationName, err)
	}
	if err := ignoreNotFound(ar.ValidatingWebhookConfigurations().Delete(ctx, manifests.ConfigurationName, metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("deleting ValidatingWebhookConfiguration %s: %w", manifests.ConfigurationName, err)
	}
	for _, gvr := range policyResources {
		if err := removePolicies(ctx, dyn.Resource(gvr), gvr.Resource); err != nil {
			return err
		}
	}
	return nil
}

// removePolicies deletes the objects of one kind named "muster-...".
func removePolicies(ctx context.Context, client dynamic.ResourceInterface, resource string) error {
	list, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Kind not served; nothing to remove", "resource", resource)
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", resource, err)
	}
	for _, o := range list.Items {
		if !strings.HasPrefix(o.GetName(), policyPrefix) {
			continue
		}
		if err := ignoreNotFound(client.Delete(ctx, o.GetName(), metav1.DeleteOptions{})); err != nil {
			return fmt.Errorf("deleting %s %s: %w", resource, o.GetName(), err)
		}
	}
	return nil
}

// removeAPIService deletes Muster's APIService.
func removeAPIService(ctx context.Context, dyn dynamic.Interface) error {
	if err := ignoreNotFound(dyn.Resource(apiServiceResource).Delete(ctx, APIServiceName, metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("deleting APIService %s: %w", APIServiceName, err)
	}
	return nil
}

// ignoreNotFound treats an object already gone as deleted.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
