package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// Muster's API group and version, served through the aggregator.
const (
	MusterGroup   = "scheduling.muster.dev"
	MusterVersion = "v1alpha1"
)

// apiServiceResource is apiregistration.k8s.io/v1 APIService.
var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// MusterAPIServiceName is the name of Muster's APIService.
const MusterAPIServiceName = MusterVersion + "." + MusterGroup

// registerMuster points the aggregator at the local Muster process and
// waits until its API answers through kube-apiserver.
//
// Muster listens on loopback, which Endpoints and EndpointSlices refuse as
// an address, so the Service is of type ExternalName "localhost". The
// aggregator's cluster resolver (kube-apiserver runs with
// --enable-aggregator-routing=false) turns it into https://localhost:<port>
// and verifies Muster's certificate for muster-apiserver.muster-system.svc
// against caBundle.
func (c *Cluster) registerMuster(ctx context.Context) error {
	if !c.opts.MusterByHand {
		return c.registerChartMuster(ctx)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: MusterService, Namespace: MusterNamespace},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(c.musterPort), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := c.Client.CoreV1().Services(MusterNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Muster service: %w", err)
	}

	caBundle, err := c.musterCABundle()
	if err != nil {
		return err
	}
	spec := map[string]any{
		"group":                MusterGroup,
		"version":              MusterVersion,
		"service":              map[string]any{"namespace": MusterNamespace, "name": MusterService, "port": int64(c.musterPort)},
		"groupPriorityMinimum": int64(1000),
		"versionPriority":      int64(15),
	}
	if caBundle != nil {
		spec["caBundle"] = caBundle
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": MusterAPIServiceName},
		"spec":       spec,
	}}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	apiServices := dyn.Resource(apiServiceResource)
	if _, err := apiServices.Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating APIService %s: %w", MusterAPIServiceName, err)
	}

	if err := waitAPIServiceAvailable(ctx, apiServices, c.opts.StartTimeout); err != nil {
		return err
	}
	if err := c.waitKubectlServes(ctx); err != nil {
		return err
	}
	return c.waitOpenAPIMerged(ctx)
}

// waitOpenAPIMerged waits until kube-apiserver's OpenAPI v3 lists Muster's
// group. The aggregator fetches an APIService's OpenAPI in the background,
// some time after the APIService is Available; until then kubectl explain
// and kubectl's client-side field validation do not know Muster's kinds.
func (c *Cluster) waitOpenAPIMerged(ctx context.Context) error {
	var lastErr error
	path := "apis/" + MusterGroup + "/" + MusterVersion
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		var index struct {
			Paths map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(body, &index); err != nil {
			lastErr = err
			return false, nil
		}
		_, ok := index.Paths[path]
		lastErr = fmt.Errorf("/openapi/v3 does not list %s yet", path)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Muster's OpenAPI to be merged (last: %v): %w", lastErr, err)
	}
	return nil
}

// waitAPIServiceAvailable waits for the aggregator's Available condition.
func waitAPIServiceAvailable(ctx context.Context, apiServices dynamic.NamespaceableResourceInterface, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		obj, err := apiServices.Get(ctx, MusterAPIServiceName, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() == nil {
				last = err.Error()
			}
			return false, nil
		}
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, cond := range conditions {
			m, ok := cond.(map[string]any)
			if !ok || m["type"] != "Available" {
				continue
			}
			last = fmt.Sprintf("Available=%v %v: %v", m["status"], m["reason"], m["message"])
			return m["status"] == "True", nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for APIService %s to be Available (last: %s): %w", MusterAPIServiceName, last, err)
	}
	return nil
}

// waitKubectlServes waits until kubectl lists PodGroups through the
// aggregator, which proves discovery, routing and authentication end to end.
func (c *Cluster) waitKubectlServes(ctx context.Context) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		_, lastErr = c.Kubectl(ctx, "get", "podgroups."+MusterGroup, "-A")
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kubectl get podgroups to answer (last: %v): %w", lastErr, err)
	}
	return nil
}
