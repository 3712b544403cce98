// Package kubectlmuster is the kubectl plugin kubectl-muster: commands
// that explain Muster's gangs as kubectl explains objects, built on
// cli-runtime's flags and printers, so that --kubeconfig, --context, -n
// and -A mean what they mean to kubectl.
package kubectlmuster

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// NewCommand is kubectl-muster and its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "kubectl-muster",
		Short: "Explain Muster's gangs: why each waits, where it runs, and what the cluster holds for them",
		// main prints an error once, as kubectl does.
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newExplainCommand(flags, streams), newTopCommand(flags, streams))
	return cmd
}

// clients are the API clients a command uses, and the namespace it works
// in (-n, else the kubeconfig context's, else default).
type clients struct {
	kube      kubernetes.Interface
	muster    versioned.Interface
	namespace string
}

func newClients(flags *genericclioptions.ConfigFlags) (*clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	muster, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("muster client: %w", err)
	}
	return &clients{kube: kube, muster: muster, namespace: ns}, nil
}
