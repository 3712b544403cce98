package kubectlmuster

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func newTopCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Gangs by state, with the capacity their pods hold on nodes and the capacity the waiting ones ask for",
		Example: `  kubectl muster top
  kubectl muster top -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newClients(flags)
			if err != nil {
				return err
			}
			return top(cmd.Context(), c, c.scope(all), streams.Out)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Gangs of every namespace, a row per namespace and state.")
	return cmd
}

// topRow is one namespace's gangs in one state.
type topRow struct {
	namespace, state string
	groups, pods     int
	// holds are the requests of the pods that hold capacity: bound to a
	// node and not finished, or pinned or placed on one by admission.
	// wants are those of the gated pods of waiting gangs, placed nowhere.
	holds, wants corev1.ResourceList
}

// top lists the gangs of namespace (all: metav1.NamespaceAll) by state.
func top(ctx context.Context, c *clients, namespace string, out io.Writer) error {
	groups, err := c.muster.SchedulingV1alpha1().PodGroups(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods, err := c.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel})
	if err != nil {
		return err
	}
	rows := topRows(groups.Items, pods.Items)
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(topTable(rows, namespace == metav1.NamespaceAll), out)
}

// state is how top groups a gang: Finished, Admitted, Waiting: REASON, or
// New before the controller has judged it.
func state(pg *v1alpha1.PodGroup) string {
	if pg.Status.Phase == v1alpha1.PodGroupSucceeded || pg.Status.Phase == v1alpha1.PodGroupFailed {
		return "Finished"
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
	switch {
	case c == nil:
		return "New"
	case c.Status == metav1.ConditionTrue:
		return "Admitted"
	}
	return "Waiting: " + c.Reason
}

// stateOrder puts admitted gangs first, then the waiting ones, then new,
// then finished ones.
func stateOrder(s string) int {
	switch {
	case s == "Admitted":
		return 0
	case strings.HasPrefix(s, "Waiting"):
		return 1
	case s == "New":
		return 2
	}
	return 3
}

func topRows(groups []v1alpha1.PodGroup, pods []corev1.Pod) []topRow {
	type groupKey struct{ namespace, name string }
	byGroup := map[groupKey][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		k := groupKey{p.Namespace, p.Labels[scheduling.PodGroupLabel]}
		byGroup[k] = append(byGroup[k], p)
	}
	rows := map[[2]string]*topRow{}
	for i := range groups {
		pg := &groups[i]
		st := state(pg)
		r := rows[[2]string{pg.Namespace, st}]
		if r == nil {
			r = &topRow{namespace: pg.Namespace, state: st, holds: corev1.ResourceList{}, wants: corev1.ResourceList{}}
			rows[[2]string{pg.Namespace, st}] = r
		}
		r.groups++
		placed := map[string]bool{}
		for _, pl := range pg.Status.Placements {
			placed[string(pl.UID)] = true
		}
		for _, p := range byGroup[groupKey{pg.Namespace, pg.Name}] {
			if scheduling.IsTerminal(p) {
				continue
			}
			r.pods++
			req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
			switch {
			case p.Spec.NodeName != "" || scheduling.PinnedNode(p) != "" || placed[string(p.UID)]:
				addTo(r.holds, req)
			case scheduling.HasGate(p) && strings.HasPrefix(st, "Waiting"):
				addTo(r.wants, req)
			}
		}
	}
	out := make([]topRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b topRow) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(stateOrder(a.state), stateOrder(b.state)), cmp.Compare(a.state, b.state))
	})
	return out
}

func addTo(sum, req corev1.ResourceList) {
	for name, q := range req {
		v := sum[name]
		v.Add(q)
		sum[name] = v
	}
}

// topTable is the rows as a Table, which kubectl's printer aligns.
func topTable(rows []topRow, withNamespace bool) *metav1.Table {
	t := &metav1.Table{}
	if withNamespace {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Namespace", Type: "string"})
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions,
		metav1.TableColumnDefinition{Name: "State", Type: "string"},
		metav1.TableColumnDefinition{Name: "Groups", Type: "integer"},
		metav1.TableColumnDefinition{Name: "Pods", Type: "integer"},
		metav1.TableColumnDefinition{Name: "Holds", Type: "string", Description: "Requests of the pods on nodes, or pinned or placed on one."},
		metav1.TableColumnDefinition{Name: "Waits for", Type: "string", Description: "Requests of the gated pods of waiting gangs, placed nowhere yet."},
	)
	for _, r := range rows {
		var cells []any
		if withNamespace {
			cells = append(cells, r.namespace)
		}
		cells = append(cells, r.state, int64(r.groups), int64(r.pods), resources(r.holds), resources(r.wants))
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

// resources is a resource list as "cpu 12, memory 48Gi", cpu and memory
// first; "-" when empty.
func resources(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n, q := range l {
		if !q.IsZero() {
			names = append(names, string(n))
		}
	}
	if len(names) == 0 {
		return "-"
	}
	rank := func(n string) int {
		switch corev1.ResourceName(n) {
		case corev1.ResourceCPU:
			return 0
		case corev1.ResourceMemory:
			return 1
		}
		return 2
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, n := range names {
		q := l[corev1.ResourceName(n)]
		parts[i] = fmt.Sprintf("%s %s", n, q.String())
	}
	return strings.Join(parts, ", ")
}
