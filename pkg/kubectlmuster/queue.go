package kubectlmuster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func newQueueCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var all bool
	printFlags := genericclioptions.NewPrintFlags("")
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "The gangs that wait for admission, in the order admission takes them, with the room each asks for and why it waits",
		Example: `  kubectl muster queue
  kubectl muster queue -A -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := newOutput(printFlags, "wide")
			if err != nil {
				return err
			}
			c, err := newClients(flags)
			if err != nil {
				return err
			}
			return queue(cmd.Context(), c, c.scope(all), out, streams, time.Now())
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "The whole queue, every namespace's gangs in it.")
	addOutputFlags(cmd, printFlags, "wide")
	return cmd
}

// queue lists the gangs of namespace (all: metav1.NamespaceAll) in the
// admission queue, in the order the server gives them: admission order;
// as a table (-o wide: with messages), or as -o asks.
func queue(ctx context.Context, c *clients, namespace string, out output, streams genericiooptions.IOStreams, now time.Time) error {
	list, err := c.muster.SchedulingV1alpha1().PendingPodGroups(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if out.printer != nil {
		// A typed client's answer has no kind: kubectl's printers need one.
		list.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("PendingPodGroupList"))
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("PendingPodGroup"))
		}
		return out.print(list, streams.Out)
	}
	allNamespaces := namespace == metav1.NamespaceAll
	if len(list.Items) == 0 {
		// As kubectl get says it, and where: on stderr.
		if allNamespaces {
			fmt.Fprintln(streams.ErrOut, "No gangs wait.")
		} else {
			fmt.Fprintf(streams.ErrOut, "No gangs wait in %s.\n", namespace)
		}
		return nil
	}
	if err := printers.NewTablePrinter(printers.PrintOptions{Wide: out.format == "wide"}).PrintObj(queueTable(list.Items, allNamespaces, now), streams.Out); err != nil {
		return err
	}
	if !allNamespaces {
		first := list.Items[0]
		fmt.Fprintf(streams.Out, "Ahead of %s, first in %s: %s\n", first.Name, namespace, elsewhere(first.Queue.AheadElsewhere))
	}
	return nil
}

// queueTable is the queue as a Table, which kubectl's printer aligns.
func queueTable(items []v1alpha1.PendingPodGroup, withNamespace bool, now time.Time) *metav1.Table {
	t := &metav1.Table{}
	if withNamespace {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Namespace", Type: "string"})
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions,
		metav1.TableColumnDefinition{Name: "Position", Type: "string", Description: "Its place in admission order, of all the gangs that wait in the cluster."},
		metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name"},
		metav1.TableColumnDefinition{Name: "Priority", Type: "integer"},
		metav1.TableColumnDefinition{Name: "Pods", Type: "integer", Description: "Its pods that wait to be placed."},
		metav1.TableColumnDefinition{Name: "MinCount", Type: "string", Description: "How many must be placed at once; - for an admitted group whose pods join it as they fit."},
		metav1.TableColumnDefinition{Name: "Needs", Type: "string", Description: "What its waiting pods request, summed."},
		metav1.TableColumnDefinition{Name: "Waiting", Type: "string", Description: "Time since its PodGroup was created."},
		metav1.TableColumnDefinition{Name: "Reason", Type: "string"},
		metav1.TableColumnDefinition{Name: "Message", Type: "string", Priority: 1},
	)
	for _, p := range items {
		var cells []any
		if withNamespace {
			cells = append(cells, p.Namespace)
		}
		minCount := "-"
		if p.MinCount > 0 {
			minCount = fmt.Sprint(p.MinCount)
		}
		cells = append(cells, fmt.Sprintf("%d/%d", p.Queue.Position, p.Queue.Waiting), p.Name, int64(p.Priority), int64(p.Pods),
			minCount, resources(p.Needs), age(p.CreationTimestamp, now), orNone(p.Reason), orNone(p.Message))
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

// position says where a gang stands: "position 2 of 5; ahead: a, b in
// this namespace; 3 gangs elsewhere: 2 at priority 1000 (16 pods), 1 at
// priority 0 (4 pods)".
func position(q v1alpha1.QueuePosition) string {
	if q.Position == 0 {
		return "not queued"
	}
	parts := []string{fmt.Sprintf("position %d of %d", q.Position, q.Waiting)}
	if len(q.Ahead) > 0 {
		parts = append(parts, "ahead: "+names(q.Ahead, 10)+" in this namespace")
	}
	if len(q.AheadElsewhere) > 0 {
		parts = append(parts, elsewhere(q.AheadElsewhere))
	}
	if len(parts) == 1 {
		parts[0] += ", first"
	}
	return strings.Join(parts, "; ")
}

// elsewhere counts the gangs of other namespaces ahead, by priority, as
// the server gives them: highest first.
func elsewhere(counts []v1alpha1.QueuedCount) string {
	gangs := int32(0)
	var parts []string
	for _, c := range counts {
		gangs += c.Gangs
		parts = append(parts, fmt.Sprintf("%d at priority %d (%s)", c.Gangs, c.Priority, plural(c.Pods, "pod")))
	}
	if gangs == 0 {
		return "no gangs elsewhere"
	}
	return plural(gangs, "gang") + " elsewhere: " + strings.Join(parts, ", ")
}

// names lists up to limit names, and counts the rest.
func names(all []string, limit int) string {
	if len(all) <= limit {
		return strings.Join(all, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(all[:limit], ", "), len(all)-limit)
}

func plural(n int32, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
