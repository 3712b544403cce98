package kubectlmuster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func newWhatIfCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var filenames []string
	printFlags := genericclioptions.NewPrintFlags("")
	cmd := &cobra.Command{
		Use:   "whatif -f FILENAME",
		Short: "What admission would decide for a workload submitted now: whether it would run and where, whom it would preempt, or why it would wait and behind whom",
		Long: `Asks the server what admission would decide for each workload in the files
(a Job, a JobSet, or the Pods that name one group), with the PodGroup its pods
name when the files hold it, without submitting anything: nothing is created,
reserved or recorded. A PodGroup that no workload in the files names is asked
about alone, its pods made from its roles' templates (a PodGroup with pod
templates). Other objects in the files are skipped.`,
		Example: `  kubectl muster whatif -f job.yaml
  kubectl muster whatif -f podgroup.yaml -f jobset.yaml -o yaml
  kubectl muster whatif -f podgroup-with-role-templates.yaml
  helm template ./chart | kubectl muster whatif -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := newOutput(printFlags)
			if err != nil {
				return err
			}
			c, err := newClients(flags)
			if err != nil {
				return err
			}
			return whatIf(cmd.Context(), c, filenames, out, streams)
		},
	}
	cmd.Flags().StringSliceVarP(&filenames, "filename", "f", nil,
		"A file, directory or URL holding the workloads to ask about and their PodGroups; - reads stdin. Repeat it for more.")
	_ = cmd.MarkFlagRequired("filename")
	addOutputFlags(cmd, printFlags)
	return cmd
}

// workload is what one WhatIfReview asks about: a Job, a JobSet, or the
// Pods of one namespace that name one group, with the PodGroup its pods
// name when the files hold it; or a PodGroup alone, which no other
// workload names.
type workload struct {
	kind      string
	namespace string
	// objects are the workload's: its Job, its JobSet, its Pods, or the
	// PodGroup alone.
	objects []*unstructured.Unstructured
	// at is where its first object comes in the files.
	at int
	// group is the name the pods' pod-group label gives.
	group    string
	podGroup *unstructured.Unstructured
}

// name is the workload as its kind and names say it: "Job train".
func (w *workload) name() string {
	if len(w.objects) == 1 {
		return w.kind + " " + objectName(w.objects[0])
	}
	var all []string
	for _, o := range w.objects {
		all = append(all, objectName(o))
	}
	return "Pods " + names(all, 10)
}

func objectName(u *unstructured.Unstructured) string {
	if n := u.GetName(); n != "" {
		return n
	}
	if g := u.GetGenerateName(); g != "" {
		return g + "*"
	}
	return "<unnamed>"
}

// whatIf asks the server about each workload in the files, in the order
// they come, and prints the answers as kubectl describe would, or as -o
// asks. A review that fails does not stop the others.
func whatIf(ctx context.Context, c *clients, filenames []string, out output, streams genericiooptions.IOStreams) error {
	infos, err := readFiles(filenames, streams.In)
	if err != nil {
		return err
	}
	wls, err := workloads(infos, c.namespace, c.explicitNamespace, streams.ErrOut)
	if err != nil {
		return err
	}
	if len(wls) == 0 {
		return fmt.Errorf("no Job, JobSet, Pod or PodGroup in %s", strings.Join(filenames, ", "))
	}
	var errs []error
	var answers []runtime.RawExtension
	described := 0
	for _, w := range wls {
		review, err := w.review()
		if err == nil {
			review, err = c.muster.SchedulingV1alpha1().WhatIfReviews(w.namespace).Create(ctx, review, metav1.CreateOptions{})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s in %s: %w", w.name(), w.namespace, err))
			continue
		}
		if out.printer != nil {
			review.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("WhatIfReview"))
			answers = append(answers, runtime.RawExtension{Object: review})
			continue
		}
		if described > 0 {
			fmt.Fprintln(streams.Out)
		}
		describeReview(streams.Out, w, review)
		described++
	}
	if out.printer != nil && len(answers) > 0 {
		var obj runtime.Object = answers[0].Object
		if len(answers) > 1 {
			// As kubectl get prints several objects.
			obj = &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: answers}
		}
		if err := out.print(obj, streams.Out); err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// readFiles reads the objects of the files, flattening Lists, without a
// word to the server: a Deployment in them needs no discovery to be
// skipped. "-" is in, read where it comes among the files.
func readFiles(filenames []string, in io.Reader) ([]*resource.Info, error) {
	b := resource.NewLocalBuilder().Unstructured().Flatten()
	stdin := false
	for _, f := range filenames {
		if f != "-" {
			b.FilenameParam(false, &resource.FilenameOptions{Filenames: []string{f}})
			continue
		}
		if stdin {
			return nil, resource.StdinMultiUseError
		}
		stdin = true
		b.Stream(in, "STDIN")
	}
	return b.Do().Infos()
}

// kindOf is the kind of a workload whatif asks about, or of a PodGroup;
// "" for any other object.
func kindOf(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "batch" && gvk.Kind == "Job",
		gvk.Group == "jobset.x-k8s.io" && gvk.Kind == "JobSet",
		gvk.Group == "" && gvk.Kind == "Pod",
		gvk.Group == v1alpha1.GroupName && gvk.Kind == "PodGroup":
		return gvk.Kind
	}
	return ""
}

// groupsNamed are the distinct groups a workload's pods name, by the
// labels of its pod templates.
func groupsNamed(u *unstructured.Unstructured) []string {
	var templates []map[string]any
	switch u.GetKind() {
	case "Pod":
		templates = append(templates, u.Object)
	case "Job":
		t, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
		templates = append(templates, t)
	case "JobSet":
		jobs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
		for _, j := range jobs {
			if j, ok := j.(map[string]any); ok {
				t, _, _ := unstructured.NestedMap(j, "template", "spec", "template")
				templates = append(templates, t)
			}
		}
	}
	var groups []string
	for _, t := range templates {
		g, _, _ := unstructured.NestedString(t, "metadata", "labels", scheduling.PodGroupLabel)
		if g != "" && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	return groups
}

// workloads groups the objects read into the workloads to ask about, in
// the order they come: each Job and JobSet on its own, the Pods of a
// namespace that name the same group together, each with the PodGroup of
// the files its pods name; and each PodGroup that no workload's pods name
// on its own, for the server to make its pods from its roles' templates.
// It warns on warn of the objects it skips, of other kinds.
func workloads(infos []*resource.Info, namespace string, explicitNamespace bool, warn io.Writer) ([]*workload, error) {
	type key struct{ namespace, name string }
	var out []*workload
	podsOf := map[key]*workload{}
	podGroups := map[key]*unstructured.Unstructured{}
	podGroupAt := map[key]int{}
	var podGroupOrder []key
	for at, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("%s: read %T, not an object", info.Source, info.Object)
		}
		ns := u.GetNamespace()
		switch {
		case ns == "":
			ns = namespace
		case explicitNamespace && ns != namespace:
			// As kubectl apply says it.
			return nil, fmt.Errorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation", ns, namespace, ns)
		}
		kind := kindOf(u)
		switch kind {
		case "":
			fmt.Fprintf(warn, "Warning: skipping %s %s/%s from %s: whatif asks about Jobs, JobSets, Pods and PodGroups\n",
				u.GetKind(), ns, objectName(u), info.Source)
			continue
		case "PodGroup":
			k := key{ns, u.GetName()}
			if podGroups[k] != nil {
				return nil, fmt.Errorf("PodGroup %s/%s is in the files twice", ns, u.GetName())
			}
			podGroups[k] = u
			podGroupAt[k] = at
			podGroupOrder = append(podGroupOrder, k)
			continue
		}
		groups := groupsNamed(u)
		if len(groups) > 1 {
			return nil, fmt.Errorf("%s %s/%s: its pods name %d groups (%s), and a gang is one group", kind, ns, objectName(u), len(groups), strings.Join(groups, ", "))
		}
		w := &workload{kind: kind, namespace: ns, objects: []*unstructured.Unstructured{u}, at: at}
		if len(groups) == 1 {
			w.group = groups[0]
		}
		if kind == "Pod" && w.group != "" {
			k := key{ns, w.group}
			if same := podsOf[k]; same != nil {
				same.objects = append(same.objects, u)
				continue
			}
			podsOf[k] = w
		}
		out = append(out, w)
	}
	paired := map[key]bool{}
	for _, w := range out {
		k := key{w.namespace, w.group}
		if pg := podGroups[k]; w.group != "" && pg != nil {
			w.podGroup = pg
			paired[k] = true
		}
	}
	for _, k := range podGroupOrder {
		if !paired[k] {
			pg := podGroups[k]
			out = append(out, &workload{kind: "PodGroup", namespace: k.namespace, objects: []*unstructured.Unstructured{pg},
				at: podGroupAt[k], group: k.name, podGroup: pg})
		}
	}
	slices.SortStableFunc(out, func(a, b *workload) int { return a.at - b.at })
	return out, nil
}

// review is the WhatIfReview that asks about the workload: its object, a
// v1 List for several Pods, and its PodGroup; a PodGroup alone is
// spec.podGroup without spec.object.
func (w *workload) review() (*v1alpha1.WhatIfReview, error) {
	r := &v1alpha1.WhatIfReview{ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace}}
	if w.kind != "PodGroup" {
		var obj any = w.objects[0].Object
		if len(w.objects) > 1 {
			items := make([]any, len(w.objects))
			for i, o := range w.objects {
				items[i] = o.Object
			}
			obj = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding the workload: %w", err)
		}
		r.Spec.Object = runtime.RawExtension{Raw: raw}
	}
	if w.podGroup != nil {
		pg := &v1alpha1.PodGroup{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(w.podGroup.Object, pg); err != nil {
			return nil, fmt.Errorf("reading PodGroup %s: %w", w.podGroup.GetName(), err)
		}
		pg.Namespace = w.namespace
		r.Spec.PodGroup = pg
	}
	return r, nil
}

// describeReview writes the server's answer for one workload, as kubectl
// describe writes an object.
func describeReview(out io.Writer, w *workload, r *v1alpha1.WhatIfReview) {
	// Each section is aligned on its own, as kubectl describe's are.
	tw := printers.GetNewTabWriter(out)
	section := func() {
		tw.Flush()
		tw = printers.GetNewTabWriter(out)
	}
	defer func() { tw.Flush() }()
	s := r.Status
	fmt.Fprintf(tw, "Workload:\t%s\n", w.name())
	fmt.Fprintf(tw, "Namespace:\t%s\n", w.namespace)
	fmt.Fprintf(tw, "Verdict:\t%s\n", verdict(s))
	if (s.Admitted || len(s.Preemptions) > 0) && s.Message != "" {
		fmt.Fprintf(tw, "\t%s\n", s.Message)
	}
	from := ""
	if w.podGroup != nil {
		from = " (from the file)"
	}
	fmt.Fprintf(tw, "PodGroup:\t%s%s: minCount %d, %s, priority %d\n", orNone(s.PodGroup), from, s.MinCount, plural(s.Pods, "pod"), s.Priority)
	if s.Domain != "" {
		fmt.Fprintf(tw, "Topology domain:\t%s\n", s.Domain)
	}

	section()
	fmt.Fprintf(tw, "Placements:\n")
	if len(s.Placements) == 0 {
		fmt.Fprintf(tw, "  <none>\n")
	} else {
		fmt.Fprintf(tw, "  POD\tNODE\n")
		for _, p := range s.Placements {
			fmt.Fprintf(tw, "  %s\t%s\n", p.Pod, p.Node)
		}
	}
	if len(s.Preemptions) > 0 {
		section()
		fmt.Fprintf(tw, "Preemptions:\n")
		fmt.Fprintf(tw, "  GANG\tPODS\tPRIORITY\n")
		for _, p := range s.Preemptions {
			gang := "<a gang in a namespace you cannot read>"
			if p.PodGroup != "" {
				gang = p.Namespace + "/" + p.PodGroup
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\n", gang, p.Pods, p.Priority)
		}
	}

	section()
	if a := s.Autoscaler; a != nil {
		fmt.Fprintf(tw, "Autoscaler:\t%s\n", autoscalerLine(a))
	}
	fmt.Fprintf(tw, "Queue:\t%s\n", position(s.Queue))
}

// verdict is the answer in a line: it would run, preempt, or wait, and why.
func verdict(s v1alpha1.WhatIfReviewStatus) string {
	switch {
	case s.Admitted:
		return "Would run now"
	case len(s.Preemptions) > 0 || s.Reason == scheduling.ReasonPreempting:
		return "Would preempt"
	case s.Message == "":
		return "Waits: " + orNone(s.Reason)
	}
	return "Waits: " + orNone(s.Reason) + ": " + s.Message
}

func autoscalerLine(a *v1alpha1.WhatIfAutoscaler) string {
	line := "would not ask for nodes"
	if a.Ask {
		line = "would ask for room for " + plural(a.Pods, "pod")
	}
	if a.Message != "" {
		line += ": " + a.Message
	}
	return line
}
