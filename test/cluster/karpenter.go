package cluster

import (
	"context"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// Files of Karpenter's kwok cloud provider (sigs.k8s.io/karpenter/kwok),
// which hack/build-tools.sh builds into Options.BinDir with the CRDs of the
// pinned release beside it.
const (
	KarpenterBinary   = "karpenter"
	KarpenterCRDsFile = "karpenter-crds.yaml"
)

// Names Karpenter runs under (those of karpenter-rbac.yaml).
const (
	// KarpenterComponent is the Karpenter process, which Restart can
	// restart.
	KarpenterComponent      = "karpenter"
	KarpenterNamespace      = "karpenter"
	KarpenterServiceAccount = "karpenter"
)

// GPUResource is the extended resource the GPU instance types carry.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// KarpenterZone is the one zone every offering of the instance types is in.
const KarpenterZone = "kwok-zone-a"

// Karpenter's APIs, served through its CRDs.
var (
	NodePoolResource      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaimResource     = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	KWOKNodeClassResource = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
)

// karpenterRBAC is Karpenter's namespace, service account and RBAC.
//
//go:embed karpenter-rbac.yaml
var karpenterRBAC []byte

// KarpenterInstanceType is one instance type Karpenter's kwok cloud
// provider can launch: a node of that capacity, on demand, in each of
// Zones (default KarpenterZone alone), at Price an hour in the first zone
// and a cent more in each later one (Karpenter launches the cheapest
// offering that fits).
type KarpenterInstanceType struct {
	Name   string
	CPU    string
	Memory string
	// GPUs is the node's GPUResource capacity (0: none).
	GPUs  int
	Price float64
	Zones []string
}

// DefaultKarpenterInstanceTypes are three CPU types and two GPU types, the
// larger with 8 GPUs (a gang of 8 pods of 8 GPUs needs 8 of those).
func DefaultKarpenterInstanceTypes() []KarpenterInstanceType {
	return []KarpenterInstanceType{
		{Name: "cpu-4", CPU: "4", Memory: "16Gi", Price: 0.2},
		{Name: "cpu-16", CPU: "16", Memory: "64Gi", Price: 0.8},
		{Name: "cpu-64", CPU: "64", Memory: "256Gi", Price: 3.2},
		{Name: "gpu-1", CPU: "8", Memory: "64Gi", GPUs: 1, Price: 4},
		{Name: "gpu-8", CPU: "96", Memory: "768Gi", GPUs: 8, Price: 30},
	}
}

// karpenterInstanceTypesJSON renders instance types in the format of the
// kwok provider's --instance-types-file-path (kwok/cloudprovider's
// InstanceTypeOptions; see its instance_types.json).
func karpenterInstanceTypesJSON(types []KarpenterInstanceType) ([]byte, error) {
	type requirement struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	type offering struct {
		Price        float64       `json:"Price"`
		Available    bool          `json:"Available"`
		Requirements []requirement `json:"Requirements"`
	}
	type instanceType struct {
		Name             string              `json:"name"`
		Offerings        []offering          `json:"offerings"`
		Architecture     string              `json:"architecture"`
		OperatingSystems []string            `json:"operatingSystems"`
		Resources        corev1.ResourceList `json:"resources"`
	}
	out := make([]instanceType, 0, len(types))
	for _, t := range types {
		resources := corev1.ResourceList{}
		for name, value := range map[corev1.ResourceName]string{corev1.ResourceCPU: t.CPU, corev1.ResourceMemory: t.Memory, corev1.ResourcePods: "110"} {
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return nil, fmt.Errorf("instance type %s: %s: %w", t.Name, name, err)
			}
			resources[name] = q
		}
		if t.GPUs > 0 {
			resources[GPUResource] = *resource.NewQuantity(int64(t.GPUs), resource.DecimalSI)
		}
		zones := t.Zones
		if len(zones) == 0 {
			zones = []string{KarpenterZone}
		}
		var offerings []offering
		for i, z := range zones {
			offerings = append(offerings, offering{Price: t.Price + float64(i)*0.01, Available: true, Requirements: []requirement{
				{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}},
				{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{z}},
			}})
		}
		out = append(out, instanceType{
			Name:             t.Name,
			Offerings:        offerings,
			Architecture:     "amd64",
			OperatingSystems: []string{"linux"},
			Resources:        resources,
		})
	}
	return json.MarshalIndent(out, "", "  ")
}

// startKarpenter installs Karpenter's CRDs and RBAC, gives it its service
// account's identity and runs its kwok cloud provider against
// kube-apiserver. The Nodes it creates carry the annotation
// kwok.x-k8s.io/node=fake (kwok/cloudprovider), the one KwokNodeAnnotation
// selects, so the harness's kwok makes them Ready and runs their pods. It
// returns once Karpenter's readyz passes: its caches synced and its CRDs
// served.
func (c *Cluster) startKarpenter(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	escape := c.KubeVersion != nil && c.KubeVersion.LessThan(version.MajorMinor(1, 31))
	if err := installCRDs(ctx, dyn, c.opts.binary(KarpenterCRDsFile), escape, c.opts.StartTimeout); err != nil {
		return err
	}
	rbacPath := filepath.Join(c.WorkDir, "karpenter-rbac.yaml")
	if err := os.WriteFile(rbacPath, karpenterRBAC, 0o600); err != nil {
		return fmt.Errorf("writing Karpenter RBAC: %w", err)
	}
	if out, err := c.Kubectl(ctx, "apply", "-f", rbacPath); err != nil {
		return fmt.Errorf("applying Karpenter RBAC: %w: %s", err, out)
	}
	kubeconfig, err := c.serviceAccountKubeconfig(KarpenterComponent, KarpenterNamespace, KarpenterServiceAccount)
	if err != nil {
		return err
	}
	typesPath := filepath.Join(c.WorkDir, "karpenter-instance-types.json")
	types, err := karpenterInstanceTypesJSON(c.opts.KarpenterInstanceTypes)
	if err != nil {
		return err
	}
	if err := os.WriteFile(typesPath, types, 0o600); err != nil {
		return fmt.Errorf("writing Karpenter instance types: %w", err)
	}
	// ports[0] serves metrics, ports[1] the health probes. Karpenter binds
	// both on every interface (":<port>"); it has no flag for the address.
	start := func(ports []int) (*process, error) {
		args := []string{
			"--instance-types-file-path=" + typesPath,
			// One replica: no Lease to create, and no wait for one.
			"--disable-leader-election",
			fmt.Sprintf("--metrics-port=%d", ports[0]),
			fmt.Sprintf("--health-probe-port=%d", ports[1]),
			// A batch of pending pods closes after 200ms without a new one
			// (default 1s), or 2s at most (default 10s).
			"--batch-idle-duration=" + c.opts.KarpenterBatchIdle.String(),
			"--batch-max-duration=" + c.opts.KarpenterBatchMax.String(),
			"--kube-client-qps=500",
			"--kube-client-burst=500",
		}
		// Karpenter has no --kubeconfig flag: controller-runtime reads
		// $KUBECONFIG.
		env := []string{"KUBECONFIG=" + kubeconfig}
		return startProcessEnv(KarpenterComponent, c.opts.binary(KarpenterBinary), args, env, c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return httpOK(ctx, url) })
	}
	p, ports, err := launch(ctx, 2, start, ready)
	if err != nil {
		return fmt.Errorf("starting karpenter: %w", err)
	}
	c.register(KarpenterComponent, p, ports, start, ready)
	return nil
}

// missingKarpenterManifests lists Karpenter's CRD file if it is not in
// BinDir.
func (o Options) missingKarpenterManifests() []string {
	if info, err := os.Stat(o.binary(KarpenterCRDsFile)); err != nil || info.IsDir() {
		return []string{o.binary(KarpenterCRDsFile)}
	}
	return nil
}

// serviceAccountKubeconfig writes <name>.kubeconfig with a client
// certificate, issued by the cluster CA, that names the service account as
// kube-apiserver would authenticate its token.
func (c *Cluster) serviceAccountKubeconfig(name, namespace, serviceAccount string) (string, error) {
	ca, err := loadAuthority(c.pki.CACert, c.pki.CAKey)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(c.WorkDir, "pki")
	clientCert, clientKey := filepath.Join(dir, name+"-client.crt"), filepath.Join(dir, name+"-client.key")
	identity := leaf{
		commonName:   serviceAccountUser(namespace, serviceAccount),
		organization: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
		usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := ca.issue(identity, clientCert, clientKey); err != nil {
		return "", err
	}
	kubeconfig := filepath.Join(c.WorkDir, name+".kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.APIServerURL, c.pki.CACert, credentials{certFile: clientCert, keyFile: clientKey}); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

// NewKWOKNodeClass returns a KWOKNodeClass, the NodeClass of Karpenter's
// kwok provider. Its CRD defaults its status to Ready; nodes register
// registrationDelay after launch.
func NewKWOKNodeClass(name string, registrationDelay time.Duration) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KWOKNodeClassResource.GroupVersion().String(),
		"kind":       "KWOKNodeClass",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{},
	}}
	if registrationDelay > 0 {
		_ = unstructured.SetNestedField(obj.Object, registrationDelay.String(), "spec", "nodeRegistrationDelay")
	}
	return obj
}

// NewNodePool returns a NodePool of the kwok NodeClass nodeClass that
// launches any of instanceTypes (all of them when empty), up to limits,
// and consolidates a node consolidateAfter after it became empty or
// underused, any number of nodes at once.
func NewNodePool(name, nodeClass string, instanceTypes []string, limits corev1.ResourceList, consolidateAfter time.Duration) *unstructured.Unstructured {
	requirements := []any{}
	if len(instanceTypes) > 0 {
		values := make([]any, len(instanceTypes))
		for i, t := range instanceTypes {
			values[i] = t
		}
		requirements = append(requirements, map[string]any{"key": corev1.LabelInstanceTypeStable, "operator": "In", "values": values})
	}
	limitMap := map[string]any{}
	for name, q := range limits {
		limitMap[string(name)] = q.String()
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": NodePoolResource.GroupVersion().String(),
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"template": map[string]any{
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": KWOKNodeClassResource.Group, "kind": "KWOKNodeClass", "name": nodeClass},
					"requirements": requirements,
					"expireAfter":  "Never",
				},
			},
			"limits": limitMap,
			"disruption": map[string]any{
				"consolidationPolicy": "WhenEmptyOrUnderutilized",
				"consolidateAfter":    consolidateAfter.String(),
				"budgets":             []any{map[string]any{"nodes": "100%"}},
			},
		},
	}}
}

// CreateKarpenterPool creates a KWOKNodeClass and a NodePool, both named
// name, that launch instanceTypes up to limits and remove a node as soon
// as it is empty (Karpenter's disruption loop then takes 30-38s), and waits
// until the NodePool is Ready: Karpenter provisions only from a Ready one.
func (c *Cluster) CreateKarpenterPool(ctx context.Context, name string, instanceTypes []string, limits corev1.ResourceList) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(KWOKNodeClassResource).Create(ctx, NewKWOKNodeClass(name, 0), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating KWOKNodeClass %s: %w", name, err)
	}
	if _, err := dyn.Resource(NodePoolResource).Create(ctx, NewNodePool(name, name, instanceTypes, limits, 0), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating NodePool %s: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := dyn.Resource(NodePoolResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return ConditionStatus(p, "Ready") == "True", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for NodePool %s to be Ready: %w", name, err)
	}
	return nil
}

// ConditionStatus returns the status of an unstructured object's condition
// of type typ, or "".
func ConditionStatus(obj *unstructured.Unstructured, typ string) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}
