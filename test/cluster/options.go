package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/muster-dev/muster/pkg/manifests"
)

// Names of the binaries the harness runs from Options.BinDir.
const (
	EtcdBinary          = "etcd"
	KubeAPIServerBinary = "kube-apiserver"
	SchedulerBinary     = "kube-scheduler"
	// ControllerManagerBinary is kube-controller-manager.
	ControllerManagerBinary = "kube-controller-manager"
	KwokBinary              = "kwok"
	KubectlBinary           = "kubectl"
)

// RequiredBinaries are the binaries every cluster needs in Options.BinDir;
// hack/build-tools.sh builds them.
var RequiredBinaries = []string{EtcdBinary, KubeAPIServerBinary, ControllerManagerBinary, SchedulerBinary, KwokBinary, KubectlBinary}

// MusterRBACManifest is Muster's RBAC, relative to the repository root.
const MusterRBACManifest = manifests.RBACFile

// modulePath identifies the repository root when BinDir is defaulted.
const modulePath = "github.com/muster-dev/muster"

// Options configures a local cluster. The zero value is usable.
type Options struct {
	// BinDir holds the control-plane binaries. Defaults to $MUSTER_BIN_DIR,
	// else bin/ at the root of the repository containing the working directory.
	BinDir string
	// WorkDir receives certificates, etcd data, kubeconfigs and logs/.
	// Defaults to a new temporary directory.
	WorkDir string

	// Nodes is the number of kwok fake nodes to create (default 4).
	Nodes int
	// NodeCPU, NodeMemory and NodePods are each node's capacity
	// (default 32, 256Gi and 110).
	NodeCPU    string
	NodeMemory string
	NodePods   int

	// MusterBinary is the muster-apiserver to run and register with the
	// aggregator. Empty runs the cluster without Muster.
	MusterBinary string
	// MusterReplicas is how many muster-apiserver processes to run on one
	// etcd (default 1). With more than one, a proxy in front of them stands
	// in for the Service, and the APIService and webhooks point at it.
	MusterReplicas int
	// MusterEtcd gives Muster an etcd of its own, which Restart can restart
	// apart from the cluster's; else Muster stores under /muster in the
	// cluster's etcd.
	MusterEtcd bool
	// MusterInternalCerts, with MusterByHand, runs Muster with
	// --cert-management=internal, as the chart always runs it: it makes its own CA and serving certificate in the
	// Secret MusterCertSecret and writes the CA into the APIService and the
	// webhook configurations, which the harness registers with no caBundle.
	MusterInternalCerts bool
	// MusterCertLifetime and MusterCACertLifetime, with MusterInternalCerts,
	// are Muster's --cert-lifetime and --cert-ca-lifetime (default: its own).
	MusterCertLifetime   time.Duration
	MusterCACertLifetime time.Duration
	// MusterByHand wires Muster the old way instead of installing the
	// chart: the harness creates its identity and RBAC, applies
	// MusterManifests, registers the APIService and the webhooks itself
	// and runs muster-apiserver with flags of its own and, unless
	// MusterInternalCerts, the harness's serving certificate. By default
	// the harness installs charts/muster with helm and runs the chart's
	// pod as a process (chart.go, podspec.go, doc.go).
	MusterByHand bool
	// MusterArgs are appended to the flags the harness passes to Muster:
	// the chart's extraArgs value, unless MusterByHand.
	MusterArgs []string
	// PreparePolicy installs the MutatingAdmissionPolicy that prepares new
	// pods in kube-apiserver, where the cluster serves it (1.36+), as
	// manifests.PreparePolicyFile does; else the mutating webhook does the work
	// (make perf compares both).
	PreparePolicy bool
	// AnonymousWebhook leaves out the Secret muster-webhook-client-ca, so
	// that the chart's webhook.clientAuth.mode Auto answers any caller, as
	// on a managed control plane whose kube-apiserver presents no client
	// certificate (kube-apiserver here still presents one; it is ignored).
	AnonymousWebhook bool
	// MusterManifests are YAML files applied with kubectl before Muster
	// starts, for example the RBAC its service account needs, with
	// MusterByHand (the chart brings its own).
	MusterManifests []string

	// JobSet runs the JobSet controller (sigs.k8s.io/jobset, the workload
	// controller Kubeflow Trainer builds on) once the fake nodes are up:
	// its CRDs, its ClusterRole, the controller as its service account, and
	// its webhooks trusted through the cluster CA. It needs the jobset
	// binary and its manifests in BinDir (hack/build-tools.sh jobset).
	JobSet bool

	// Frameworks run these frameworks' controllers once the fake nodes
	// are up (StartFramework, which a test may also call later). Each needs
	// its binary and manifests in BinDir (hack/build-tools.sh frameworks).
	Frameworks []Framework

	// ProvisioningRequestCRD serves cluster-autoscaler's ProvisioningRequest
	// API (autoscaling.x-k8s.io/v1) from a CRD the harness embeds, before
	// Muster starts, so that --autoscaling=auto finds it. Nothing acts on a
	// request: a test sets the conditions cluster-autoscaler would.
	ProvisioningRequestCRD bool

	// Karpenter runs Karpenter's kwok cloud provider (sigs.k8s.io/karpenter
	// /kwok) once the fake nodes are up: its CRDs (NodePool, NodeClaim,
	// KWOKNodeClass...), its RBAC (karpenter-rbac.yaml) and the provider as
	// its service account. It launches a fake node, managed by the harness's
	// kwok, for pods that fit no node; a test creates a KWOKNodeClass and a
	// NodePool (NewKWOKNodeClass, NewNodePool) for it to do so. It needs
	// the karpenter binary and its CRDs in BinDir (hack/build-tools.sh
	// karpenter).
	Karpenter bool
	// KarpenterInstanceTypes are the instance types Karpenter can launch
	// (default DefaultKarpenterInstanceTypes).
	KarpenterInstanceTypes []KarpenterInstanceType
	// KarpenterBatchIdle and KarpenterBatchMax end Karpenter's batch of
	// pending pods after that long without a new one, or at most that long
	// (default 200ms and 2s; Karpenter's own are 1s and 10s).
	KarpenterBatchIdle time.Duration
	KarpenterBatchMax  time.Duration

	// APIServerArgs, ControllerManagerArgs and SchedulerArgs are appended to
	// the harness's flags for kube-apiserver, kube-controller-manager and
	// kube-scheduler, e.g. --feature-gates.
	APIServerArgs         []string
	ControllerManagerArgs []string
	SchedulerArgs         []string

	// StartTimeout bounds each component's start (default 2m).
	StartTimeout time.Duration
}

// withDefaults fills unset fields.
func (o Options) withDefaults() (Options, error) {
	if o.Nodes == 0 {
		o.Nodes = 4
	}
	if o.NodeCPU == "" {
		o.NodeCPU = "32"
	}
	if o.NodeMemory == "" {
		o.NodeMemory = "256Gi"
	}
	if o.NodePods == 0 {
		o.NodePods = 110
	}
	if o.MusterReplicas == 0 {
		o.MusterReplicas = 1
	}
	if len(o.KarpenterInstanceTypes) == 0 {
		o.KarpenterInstanceTypes = DefaultKarpenterInstanceTypes()
	}
	if o.KarpenterBatchIdle == 0 {
		o.KarpenterBatchIdle = 200 * time.Millisecond
	}
	if o.KarpenterBatchMax == 0 {
		o.KarpenterBatchMax = 2 * time.Second
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.BinDir == "" {
		dir, err := DefaultBinDir()
		if err != nil {
			return o, err
		}
		o.BinDir = dir
	}
	if o.WorkDir == "" {
		dir, err := os.MkdirTemp("", "muster-cluster-")
		if err != nil {
			return o, fmt.Errorf("creating work dir: %w", err)
		}
		o.WorkDir = dir
	}
	var err error
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, fmt.Errorf("resolving bin dir: %w", err)
	}
	if o.WorkDir, err = filepath.Abs(o.WorkDir); err != nil {
		return o, fmt.Errorf("resolving work dir: %w", err)
	}
	if o.MusterBinary != "" {
		if o.MusterBinary, err = filepath.Abs(o.MusterBinary); err != nil {
			return o, fmt.Errorf("resolving muster binary: %w", err)
		}
	}
	return o, nil
}

// binary returns the path of a control-plane binary.
func (o Options) binary(name string) string {
	return filepath.Join(o.BinDir, name)
}

// MissingBinaries lists the required binaries (and Muster's, if set) that
// are not executable files. An empty BinDir means DefaultBinDir.
func (o Options) MissingBinaries() []string {
	if o.BinDir == "" {
		if dir, err := DefaultBinDir(); err == nil {
			o.BinDir = dir
		}
	}
	paths := make([]string, 0, len(RequiredBinaries)+1)
	for _, name := range RequiredBinaries {
		paths = append(paths, o.binary(name))
	}
	if o.MusterBinary != "" {
		paths = append(paths, o.MusterBinary)
	}
	if o.JobSet {
		paths = append(paths, o.binary(JobSetBinary))
	}
	if o.Karpenter {
		paths = append(paths, o.binary(KarpenterBinary))
	}
	var missing []string
	for _, p := range paths {
		if info, err := os.Stat(p); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	if o.JobSet {
		missing = append(missing, o.missingJobSetManifests()...)
	}
	if o.Karpenter {
		missing = append(missing, o.missingKarpenterManifests()...)
	}
	missing = append(missing, o.missingFrameworkFiles()...)
	return missing
}

// DefaultBinDir returns $MUSTER_BIN_DIR, or bin/ at the repository root. A
// relative $MUSTER_BIN_DIR is taken from the repository root too, since
// `go test` runs each package in its own directory.
func DefaultBinDir() (string, error) {
	dir := os.Getenv("MUSTER_BIN_DIR")
	if filepath.IsAbs(dir) {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	if dir == "" {
		dir = "bin"
	}
	return filepath.Join(root, dir), nil
}

// DefaultMusterBinary returns $MUSTER_BINARY, or muster-apiserver in
// binDir. `make e2e` sets it when the control plane of another Kubernetes
// release runs from a directory of its own (bin/kube-<version>/) while
// muster-apiserver stays in bin/.
func DefaultMusterBinary(binDir string) string {
	if path := os.Getenv("MUSTER_BINARY"); path != "" {
		return path
	}
	return filepath.Join(binDir, "muster-apiserver")
}

// RepoRoot walks up from the working directory to the directory whose
// go.mod declares the Muster module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding repository root: %w", err)
	}
	for {
		if declaresModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod at path is Muster's.
func declaresModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == modulePath
		}
	}
	return false
}

// DefaultMusterManifests returns the repository's MusterRBACManifest as an
// absolute path, or nothing if there is none, for Options.MusterManifests.
func DefaultMusterManifests() []string {
	root, err := RepoRoot()
	if err != nil {
		return nil
	}
	path := filepath.Join(root, MusterRBACManifest)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return []string{path}
}
