// Package kubectlmuster is the kubectl plugin kubectl-muster: commands
// that explain Muster's gangs as kubectl explains objects, built on
// cli-runtime's flags and printers, so that --kubeconfig, --context, -n
// and -A mean what they mean to kubectl.
package kubectlmuster

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
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
	cmd.AddCommand(newExplainCommand(flags, streams), newTopCommand(flags, streams),
		newQueueCommand(flags, streams), newWhatIfCommand(flags, streams))
	return cmd
}

// clients are the API clients a command uses, and the namespace it works
// in (-n, else the kubeconfig context's, else default).
type clients struct {
	kube      kubernetes.Interface
	muster    versioned.Interface
	namespace string
	// explicitNamespace says the namespace came from -n: as kubectl does,
	// an object read from a file may then not name another.
	explicitNamespace bool
}

// scope is the namespace a listing command reads: all of them with -A.
func (c *clients) scope(all bool) string {
	if all {
		return metav1.NamespaceAll
	}
	return c.namespace
}

func newClients(flags *genericclioptions.ConfigFlags) (*clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	ns, explicit, err := flags.ToRawKubeConfigLoader().Namespace()
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
	return &clients{kube: kube, muster: muster, namespace: ns, explicitNamespace: explicit}, nil
}

// addOutputFlags adds kubectl's -o and its companions, and names the
// formats the command prints itself (extra) among those -o takes.
func addOutputFlags(cmd *cobra.Command, printFlags *genericclioptions.PrintFlags, extra ...string) {
	printFlags.AddFlags(cmd)
	formats := slices.Concat(extra, printFlags.AllowedFormats())
	cmd.Flags().Lookup("output").Usage = fmt.Sprintf("Output format. One of: (%s).", strings.Join(formats, ", "))
}

// output is how a command prints: as -o asks (format), with printer; or,
// printer nil, in its own way (format "", or one of its own formats).
type output struct {
	format  string
	printer printers.ResourcePrinter
}

// newOutput is the output -o asks for, own being the formats the command
// prints itself.
func newOutput(printFlags *genericclioptions.PrintFlags, own ...string) (output, error) {
	o := output{format: *printFlags.OutputFormat}
	if o.format == "" || slices.Contains(own, o.format) {
		return o, nil
	}
	p, err := printFlags.ToPrinter()
	o.printer = p
	return o, err
}

// print prints obj with the printer; a list item by item for -o name, as
// kubectl get does, since the name printer takes no lists.
func (o output) print(obj runtime.Object, out io.Writer) error {
	if o.format != "name" || !meta.IsListType(obj) {
		return o.printer.PrintObj(obj, out)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return err
	}
	for _, item := range items {
		if err := o.printer.PrintObj(item, out); err != nil {
			return err
		}
	}
	return nil
}
