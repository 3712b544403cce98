package uninstall

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NewCommand returns `muster-apiserver uninstall`, which the chart's
// pre-delete hook runs in the cluster with its own service account.
func NewCommand() *cobra.Command {
	o := DefaultOptions()
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Take Muster out of the cluster's admission path and release every pod it holds",
		Long: "Deletes Muster's pod webhooks and admission policies, its APIService and its Deployment, waits until no " +
			"muster-apiserver pod runs, then removes Muster's scheduling gate and tracking finalizer from every pod that " +
			"still has them and deletes its capacity-request pods. A gated pod is then scheduled like any other, with no " +
			"gang guarantee. The rest of the install (RBAC, PriorityClass, namespace, etcd) is left to helm uninstall or " +
			"kubectl delete.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			kube, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "muster-uninstall"))
			if err != nil {
				return fmt.Errorf("creating kube client: %w", err)
			}
			dyn, err := dynamic.NewForConfig(rest.AddUserAgent(cfg, "muster-uninstall"))
			if err != nil {
				return fmt.Errorf("creating dynamic client: %w", err)
			}
			return Run(c.Context(), kube, dyn, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", kubeconfig, "Kubeconfig of the cluster; empty uses the in-cluster service account.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace muster-apiserver runs in.")
	fs.StringVar(&o.Deployment, "deployment", o.Deployment, "Name of muster-apiserver's Deployment in --namespace.")
	fs.StringVar(&o.ServerSelector, "server-selector", o.ServerSelector, "Label selector of muster-apiserver's pods in --namespace; the uninstall waits until none is left.")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", o.StopTimeout, "How long to wait for muster-apiserver's pods to go.")
	return cmd
}

// restConfig loads kubeconfig, or the in-cluster configuration when it is
// empty.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster configuration (set --kubeconfig outside a cluster): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	return cfg, nil
}
