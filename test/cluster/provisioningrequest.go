package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// provisioningRequestCRD is the ProvisioningRequest API, written for the
// harness from the API's documented fields (no cluster-autoscaler release
// is on the module proxy to take it from).
//
//go:embed provisioningrequest-crd.yaml
var provisioningRequestCRD []byte

// ProvisioningRequestResource is the API Options.ProvisioningRequestCRD
// serves.
var ProvisioningRequestResource = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1", Resource: "provisioningrequests"}

// installProvisioningRequestCRD creates the ProvisioningRequest CRD and
// waits until it is Established.
func (c *Cluster) installProvisioningRequestCRD(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	return createCRDs(ctx, dyn, provisioningRequestCRD, "provisioningrequest-crd.yaml", false, c.opts.StartTimeout)
}

// SetProvisioningRequestCondition sets one condition of a
// ProvisioningRequest through its status subresource, as cluster-autoscaler
// would, retrying on conflict.
func SetProvisioningRequestCondition(ctx context.Context, dyn dynamic.Interface, namespace, name string, cond metav1.Condition) error {
	prs := dyn.Resource(ProvisioningRequestResource).Namespace(namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pr, err := prs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		list, _, _ := unstructured.NestedSlice(pr.Object, "status", "conditions")
		if cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = metav1.Now()
		}
		set := map[string]interface{}{
			"type":               cond.Type,
			"status":             string(cond.Status),
			"reason":             cond.Reason,
			"message":            cond.Message,
			"lastTransitionTime": cond.LastTransitionTime.UTC().Format(time.RFC3339),
			"observedGeneration": pr.GetGeneration(),
		}
		replaced := false
		for i, c := range list {
			if m, ok := c.(map[string]interface{}); ok && m["type"] == cond.Type {
				list[i], replaced = set, true
			}
		}
		if !replaced {
			list = append(list, set)
		}
		if err := unstructured.SetNestedSlice(pr.Object, list, "status", "conditions"); err != nil {
			return err
		}
		_, err = prs.UpdateStatus(ctx, pr, metav1.UpdateOptions{})
		return err
	})
}
