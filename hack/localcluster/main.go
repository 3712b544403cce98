// Command localcluster runs a local control plane with Muster registered
// with the aggregator (`make run`): etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok fake nodes, the JobSet
// controller, with --autoscaler Karpenter's kwok cloud provider, with
// --frameworks the controllers of LeaderWorkerSet, KubeRay and Kubeflow
// Trainer, and muster-apiserver, until interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/test/cluster"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		opts       cluster.Options
		out        string
		manifests  stringList
		musterArg  stringList
		frameworks bool
	)
	klog.InitFlags(nil)
	flag.IntVar(&opts.Nodes, "nodes", 4, "number of kwok fake nodes")
	flag.StringVar(&opts.NodeCPU, "node-cpu", "32", "CPU capacity of each node")
	flag.StringVar(&opts.NodeMemory, "node-memory", "256Gi", "memory capacity of each node")
	flag.IntVar(&opts.NodePods, "node-pods", 110, "pod capacity of each node")
	flag.StringVar(&out, "out", "_out", "work dir for certificates, kubeconfig, etcd data and logs")
	flag.StringVar(&opts.BinDir, "bin-dir", "bin", "directory with the control-plane binaries, etcd, kwok and kubectl (hack/build-tools.sh)")
	flag.BoolVar(&opts.JobSet, "jobset", true, "run the JobSet controller (sigs.k8s.io/jobset) with its CRDs and webhooks")
	flag.BoolVar(&opts.Karpenter, "autoscaler", false, "run Karpenter (sigs.k8s.io/karpenter) with its kwok cloud provider, and a KWOKNodeClass and NodePool named "+autoscalerPool+" over its instance types, so that pods that fit no node get one")
	flag.BoolVar(&frameworks, "frameworks", false, "run the controllers of LeaderWorkerSet (sigs.k8s.io/lws), KubeRay (ray-operator) and Kubeflow Trainer (needs --jobset), each with its CRDs and webhooks (hack/build-tools.sh frameworks)")
	flag.StringVar(&opts.MusterBinary, "muster-binary", "", "muster-apiserver to run (default $MUSTER_BINARY, else <bin-dir>/muster-apiserver); --muster-binary= runs the cluster without Muster")
	flag.Var(&musterArg, "muster-arg", "extra flag for muster-apiserver (repeatable)")
	flag.Var(&manifests, "muster-manifest", "with --muster-by-hand, YAML applied with kubectl before Muster starts (repeatable; default: "+cluster.MusterRBACManifest+", Muster's RBAC)")
	flag.BoolVar(&opts.MusterByHand, "muster-by-hand", false, "wire Muster by hand (the harness's RBAC, APIService, webhooks and certificates) instead of helm install of "+cluster.ChartDir)
	flag.Parse()
	if !flagSet("muster-binary") {
		opts.MusterBinary = cluster.DefaultMusterBinary(opts.BinDir)
	}
	opts.WorkDir = out
	if frameworks {
		opts.Frameworks = cluster.Frameworks
	}
	opts.MusterArgs = musterArg
	opts.MusterManifests = manifests
	if !flagSet("muster-manifest") {
		opts.MusterManifests = cluster.DefaultMusterManifests()
	}

	if missing := opts.MissingBinaries(); len(missing) > 0 {
		return fmt.Errorf("missing %s: run hack/build-tools.sh (and build muster-apiserver), or pass --muster-binary= to run without Muster",
			strings.Join(missing, ", "))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", out, err)
	}
	lock := filepath.Join(out, "run.pid")
	if err := acquireLock(lock); err != nil {
		if errors.Is(err, errAlreadyRunning) {
			return fmt.Errorf("%w; use it with --kubeconfig %s, or stop it first (Ctrl-C in its terminal)", err, filepath.Join(out, "kubeconfig"))
		}
		return err
	}
	defer releaseLock(lock)
	if err := linkBinDir(opts.BinDir, out); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Printf("starting local cluster in %s (logs in %s)...\n", out, filepath.Join(out, "logs"))
	began := time.Now()
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Stop()
	if opts.Karpenter {
		if err := createNodePool(ctx, c); err != nil {
			return err
		}
	}
	printUsage(c, opts, out, time.Since(began))

	if err := waitForExit(ctx, c); err != nil {
		return err
	}
	fmt.Println("\nstopping local cluster...")
	return nil
}

// frameworkAPIs says what each framework's controller serves, for the
// banner.
var frameworkAPIs = map[cluster.Framework]string{
	cluster.LeaderWorkerSet: "LeaderWorkerSets (leaderworkerset.x-k8s.io/v1)",
	cluster.KubeRay:         "RayClusters and RayJobs (ray.io/v1)",
	cluster.Trainer:         "TrainJobs and TrainingRuntimes (trainer.kubeflow.org/v1alpha1)",
}

// autoscalerPool names the KWOKNodeClass and NodePool that --autoscaler
// creates.
const autoscalerPool = "default"

// createNodePool gives Karpenter a KWOKNodeClass and a NodePool over every
// instance type, up to 1000 CPUs and 64 GPUs, that consolidates a node 30s
// after it became empty or underused.
func createNodePool(ctx context.Context, c *cluster.Cluster) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	if _, err := dyn.Resource(cluster.KWOKNodeClassResource).Create(ctx, cluster.NewKWOKNodeClass(autoscalerPool, 0), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating KWOKNodeClass %s: %w", autoscalerPool, err)
	}
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), cluster.GPUResource: resource.MustParse("64")}
	pool := cluster.NewNodePool(autoscalerPool, autoscalerPool, nil, limits, 30*time.Second)
	if _, err := dyn.Resource(cluster.NodePoolResource).Create(ctx, pool, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating NodePool %s: %w", autoscalerPool, err)
	}
	return nil
}

// linkBinDir points <out>/bin at the control plane's bin dir, so that one
// `export PATH=$PWD/_out/bin:$PATH` finds the kubectl of the running
// release, whichever KUBE_VERSION make run was given.
func linkBinDir(binDir, out string) error {
	abs, err := filepath.Abs(binDir)
	if err != nil {
		return fmt.Errorf("resolving bin dir: %w", err)
	}
	link := filepath.Join(out, "bin")
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replacing %s: %w", link, err)
	}
	if err := os.Symlink(abs, link); err != nil {
		return fmt.Errorf("linking %s to %s: %w", link, abs, err)
	}
	return nil
}

// flagSet reports whether a flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// printUsage tells the user how to reach the cluster.
func printUsage(c *cluster.Cluster, opts cluster.Options, out string, took time.Duration) {
	kubeconfig := filepath.Join(out, "kubeconfig")
	kubectl := filepath.Join(opts.BinDir, cluster.KubectlBinary)
	fmt.Printf("\nlocal cluster is up after %s: kube-apiserver %s (Kubernetes v%s), %d kwok nodes\n", took.Round(time.Second), c.APIServerURL, c.KubeVersion, opts.Nodes)
	if c.MusterURL != "" {
		if cmd := c.HelmInstallCommand(); cmd != "" {
			fmt.Printf("Muster installed with:\n  %s\n", cmd)
			fmt.Printf("kwok nodes run no containers: the chart's pods stay Pending, and the harness runs muster-apiserver with their args, Secrets and service account token; its Service is an ExternalName for localhost (test/cluster/doc.go)\n")
		}
		fmt.Printf("muster-apiserver %s, registered as APIService %s; its pod webhook at %s, called with a client certificate\n",
			c.MusterURL, cluster.MusterAPIServiceName, c.MusterWebhookURL)
	}
	if opts.JobSet {
		fmt.Printf("jobset controller (sigs.k8s.io/jobset), serving JobSets (jobset.x-k8s.io/v1alpha2)\n")
	}
	for _, f := range opts.Frameworks {
		fmt.Printf("%s controller, serving %s\n", f, frameworkAPIs[f])
	}
	if opts.Karpenter {
		instanceTypes := opts.KarpenterInstanceTypes
		if len(instanceTypes) == 0 {
			instanceTypes = cluster.DefaultKarpenterInstanceTypes()
		}
		types := make([]string, 0, len(instanceTypes))
		for _, t := range instanceTypes {
			desc := fmt.Sprintf("%s (%s CPU, %s", t.Name, t.CPU, t.Memory)
			if t.GPUs > 0 {
				desc += fmt.Sprintf(", %d %s", t.GPUs, cluster.GPUResource)
			}
			types = append(types, desc+")")
		}
		fmt.Printf("autoscaler: karpenter (sigs.k8s.io/karpenter, kwok cloud provider), NodePool %s and KWOKNodeClass %s over instance types %s; its nodes consolidate 30s after they empty\n",
			autoscalerPool, autoscalerPool, strings.Join(types, ", "))
	}
	fmt.Printf("\ntry:\n")
	fmt.Printf("  %s --kubeconfig %s get nodes\n", kubectl, kubeconfig)
	if c.MusterURL != "" {
		fmt.Printf("  %s --kubeconfig %s get pg -A\n", kubectl, kubeconfig)
		fmt.Printf("  %s --kubeconfig %s get workloads -A\n", kubectl, kubeconfig)
		fmt.Printf("  %s --kubeconfig %s api-resources --api-group=%s\n", kubectl, kubeconfig, cluster.MusterGroup)
	}
	fmt.Printf("  %s --kubeconfig %s run demo --image=busybox --restart=Never --annotations=%s=30s\n", kubectl, kubeconfig, cluster.RunForAnnotation)
	if opts.Karpenter {
		fmt.Printf("  %s --kubeconfig %s run gpu --image=busybox --restart=Never --overrides='{\"spec\":{\"containers\":[{\"name\":\"gpu\",\"image\":\"busybox\",\"resources\":{\"limits\":{\"%s\":\"8\"}}}]}}'\n", kubectl, kubeconfig, cluster.GPUResource)
		fmt.Printf("  %s --kubeconfig %s get nodepools,nodeclaims,nodes\n", kubectl, kubeconfig)
	}
	fmt.Printf("\nor, with the kubectl that make run built on your PATH:\n  export PATH=%s:$PATH KUBECONFIG=%s\n  kubectl get pg -A\n", filepath.Join(out, "bin"), kubeconfig)
	logs := []string{"etcd", "kube-apiserver", cluster.ControllerManagerComponent, "kube-scheduler", "kwok"}
	if opts.JobSet {
		logs = append(logs, cluster.JobSetComponent)
	}
	if opts.Karpenter {
		logs = append(logs, cluster.KarpenterComponent)
	}
	for _, f := range opts.Frameworks {
		logs = append(logs, string(f))
	}
	if c.MusterURL != "" {
		logs = append(logs, "muster-apiserver")
	}
	fmt.Printf("logs: %s/{%s}.log\n", filepath.Join(out, "logs"), strings.Join(logs, ","))
	fmt.Printf("press Ctrl-C to stop\n")
}

// waitForExit blocks until ctx ends (a signal) or a component dies.
func waitForExit(ctx context.Context, c *cluster.Cluster) error {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if exited := c.Exited(); len(exited) > 0 {
				return fmt.Errorf("%s exited unexpectedly; see %s", strings.Join(exited, ", "), filepath.Dir(c.LogPath(exited[0])))
			}
		}
	}
}
