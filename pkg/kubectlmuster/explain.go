package kubectlmuster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func newExplainCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "explain (podgroup | pg) NAME",
		Short: "Why a gang waits, or where it runs: its conditions, pods, placements, preemption and events, and what would let it run",
		Example: `  kubectl muster explain pg train
  kubectl muster explain podgroup/train -n team-a`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := podGroupName(args)
			if err != nil {
				return err
			}
			c, err := newClients(flags)
			if err != nil {
				return err
			}
			return explain(cmd.Context(), c, name, streams.Out, time.Now())
		},
	}
}

// podGroupName takes "pg NAME", "podgroup NAME" or "pg/NAME", as kubectl
// takes a resource and a name.
func podGroupName(args []string) (string, error) {
	kind, name := args[0], ""
	if len(args) == 2 {
		name = args[1]
	} else if k, n, ok := strings.Cut(args[0], "/"); ok {
		kind, name = k, n
	}
	switch strings.ToLower(kind) {
	case "pg", "podgroup", "podgroups", "podgroups.scheduling.muster.dev", "podgroup.scheduling.muster.dev":
	default:
		return "", fmt.Errorf("explain takes a PodGroup (pg NAME, or pg/NAME), not %q", kind)
	}
	if name == "" {
		return "", fmt.Errorf("explain needs the PodGroup's name: pg NAME")
	}
	return name, nil
}

// explain writes what kubectl-muster knows of one gang.
func explain(ctx context.Context, c *clients, name string, out io.Writer, now time.Time) error {
	pg, err := c.muster.SchedulingV1alpha1().PodGroups(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pods, err := c.kube.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel + "=" + name})
	if err != nil {
		return err
	}
	events, err := c.kube.CoreV1().Events(c.namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "PodGroup", "involvedObject.name": name, "involvedObject.uid": string(pg.UID),
	}.String()})
	if err != nil {
		return err
	}
	queued := queueLine(ctx, c, name)
	// Each section is aligned on its own, as kubectl describe's are.
	w := printers.GetNewTabWriter(out)
	section := func() {
		w.Flush()
		w = printers.GetNewTabWriter(out)
	}
	defer func() { w.Flush() }()
	s := pg.Status
	fmt.Fprintf(w, "Name:\t%s\n", pg.Name)
	fmt.Fprintf(w, "Namespace:\t%s\n", pg.Namespace)
	fmt.Fprintf(w, "Created:\t%s (%s ago)\n", pg.CreationTimestamp.UTC().Format(time.RFC3339), age(pg.CreationTimestamp, now))
	fmt.Fprintf(w, "Phase:\t%s\n", orNone(string(s.Phase)))
	fmt.Fprintf(w, "Gang:\t%s\n", gangLine(pg))
	fmt.Fprintf(w, "Pods:\t%d: %d gated, %d scheduled, %d ready, %d succeeded, %d failed\n", s.Pods, s.Gated, s.Scheduled, s.Ready, s.Succeeded, s.Failed)
	admitted := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionAdmitted)
	if admitted != nil {
		fmt.Fprintf(w, "Admitted:\t%s, %s, for %s\n", admitted.Status, admitted.Reason, age(admitted.LastTransitionTime, now))
		if admitted.Message != "" {
			fmt.Fprintf(w, "\t%s\n", admitted.Message)
		}
	}
	fmt.Fprintf(w, "What would let it run:\t%s\n", wouldLetItRun(pg, admitted))
	if queued != "" {
		fmt.Fprintf(w, "Queue:\t%s\n", queued)
	}

	section()
	fmt.Fprintf(w, "Conditions:\n")
	if len(s.Conditions) == 0 {
		fmt.Fprintf(w, "  <none>\n")
	} else {
		fmt.Fprintf(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE\n")
		for _, cond := range s.Conditions {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", cond.Type, cond.Status, cond.Reason, age(cond.LastTransitionTime, now), cond.Message)
		}
	}

	section()
	fmt.Fprintf(w, "Pods and nodes:\n")
	writePods(w, pg, pods.Items)

	section()
	if p := s.Preemption; p != nil {
		fmt.Fprintf(w, "Preemption:\tdecided %s ago, at priority %d, of %d victims\n", age(p.Time, now), p.Priority, len(p.Victims))
		fmt.Fprintf(w, "  KIND\tVICTIM\tPRIORITY\tPODS\n")
		for _, v := range p.Victims {
			fmt.Fprintf(w, "  %s\t%s\t%d\t%d\n", v.Kind, victimName(v), v.Priority, v.Pods)
		}
	}
	if d := s.TopologyDomain; d != nil {
		fmt.Fprintf(w, "Topology domain:\t%s=%s\n", d.Key, d.Value)
	}

	section()
	fmt.Fprintf(w, "Events:\n")
	writeEvents(w, events.Items, now)
	return nil
}

// queueLine is where the group stands in the admission queue; "" when it
// is not in it, or when the server serves no queue (NotFound either way):
// explain asks servers older than the queue too.
func queueLine(ctx context.Context, c *clients, name string) string {
	p, err := c.muster.SchedulingV1alpha1().PendingPodGroups(c.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ""
	case err != nil:
		// The rest of what explain says stands without it.
		return "<unknown>: " + err.Error()
	}
	return position(p.Queue)
}

// gangLine says what the group's policy asks for.
func gangLine(pg *v1alpha1.PodGroup) string {
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
		var roles []string
		for _, r := range pg.Spec.Roles {
			role := fmt.Sprintf("%s %d", r.Name, r.Count)
			if r.CreatedLater {
				role += " created later"
			}
			roles = append(roles, role)
		}
		line := fmt.Sprintf("minCount %d, admitted all at once", g.MinCount)
		if len(roles) > 0 {
			line += "; roles: " + strings.Join(roles, ", ")
		}
		return line
	}
	return "basic: each pod admitted on its own"
}

// writePods lists the group's pods: where each runs, or the node it is
// placed on or pinned to, or that it waits.
func writePods(w io.Writer, pg *v1alpha1.PodGroup, pods []corev1.Pod) {
	if len(pods) == 0 {
		fmt.Fprintf(w, "  <none>\n")
		return
	}
	placed := map[string]string{}
	for _, p := range pg.Status.Placements {
		placed[string(p.UID)] = p.Node
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	fmt.Fprintf(w, "  POD\tPHASE\tGATED\tNODE\n")
	for i := range pods {
		p := &pods[i]
		node := "<waiting>"
		switch {
		case p.Spec.NodeName != "":
			node = p.Spec.NodeName
		case scheduling.PinnedNode(p) != "":
			node = scheduling.PinnedNode(p) + " (pinned)"
		case placed[string(p.UID)] != "":
			node = placed[string(p.UID)] + " (placed)"
		}
		fmt.Fprintf(w, "  %s\t%s\t%v\t%s\n", p.Name, p.Status.Phase, scheduling.HasGate(p), node)
	}
}

// victimName is a victim as the status names it: by namespace and name,
// or, for one the caller's namespace may not see, by reference.
func victimName(v v1alpha1.PreemptionVictim) string {
	switch {
	case v.Name != "":
		return v.Namespace + "/" + v.Name
	case v.Ref != "":
		return "ref " + v.Ref
	}
	return string(v.UID)
}

// writeEvents lists events as kubectl describe does: oldest first.
func writeEvents(w io.Writer, events []corev1.Event, now time.Time) {
	if len(events) == 0 {
		fmt.Fprintf(w, "  <none>\n")
		return
	}
	slices.SortFunc(events, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	fmt.Fprintf(w, "  TYPE\tREASON\tAGE\tFROM\tMESSAGE\n")
	for _, e := range events {
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		seen := age(metav1.NewTime(eventTime(e)), now)
		if e.Count > 1 {
			seen += fmt.Sprintf(" (x%d)", e.Count)
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, seen, from, strings.TrimSpace(e.Message))
	}
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
