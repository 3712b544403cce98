package manifests

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// maxCalls bounds the function calls one of Muster's expressions may make
// on any request: a constant, whatever the lengths of the pod's lists. In
// kube-apiserver a comprehension's time is quadratic in its list's length
// (cel.go), so an expression whose calls grow with a list the requester
// chose is a way to spend kube-apiserver's CPU; 100,000 items cost 14 s.
const maxCalls = 2000

// longList is the length of the lists on the pods below: what fits in
// kube-apiserver's 3 MiB request at a few bytes an item.
const longList = 100_000

// TestPoliciesRunInBoundedSteps evaluates every expression of Muster's
// policies and webhook match conditions on requests whose pods carry lists
// of longList items, and counts the function calls each makes (every
// comprehension step makes at least one): none may make more than
// maxCalls. The requests are those a tenant makes, and the writes Muster's
// controller makes to a tenant's pods: a pod it preempts may carry any
// labels, finalizers and gates, and a labelled pod is held to
// MaxPodFinalizers and MaxPodSchedulingGates.
func TestPoliciesRunInBoundedSteps(t *testing.T) {
	tenant := map[string]any{"username": "alice", "groups": []any{"system:authenticated"}}
	muster := map[string]any{"username": musterAccount.GetName(), "groups": toAny(musterAccount.GetGroups())}
	tests := []struct {
		name        string
		op          admissionregistrationv1.OperationType
		subResource string
		user        map[string]any
		old, object *corev1.Pod
	}{
		{name: "a tenant creates a labelled pod with long lists", op: admissionregistrationv1.Create, user: tenant,
			object: longLists(labelledPod(), longList)},
		{name: "a tenant creates a labelled pod with many affinity terms", op: admissionregistrationv1.Create, user: tenant,
			object: manyTerms(labelledPod(), longList)},
		{name: "a tenant creates a labelled pod with long topology annotations", op: admissionregistrationv1.Create, user: tenant,
			object: longTopology(labelledPod(), longList, false)},
		{name: "a tenant creates a labelled pod with 4 long preferred levels", op: admissionregistrationv1.Create, user: tenant,
			object: longTopology(labelledPod(), longList, true)},
		{name: "a tenant changes long topology annotations by update", op: admissionregistrationv1.Update, user: tenant,
			old: longTopology(labelledPod(), longList, true), object: longTopology(labelledPod(), longList, false)},
		{name: "a tenant grows a labelled pod's lists by update", op: admissionregistrationv1.Update, user: tenant,
			old: labelledPod(), object: longLists(labelledPod(), longList)},
		{name: "a tenant adds many affinity requirements by update", op: admissionregistrationv1.Update, user: tenant,
			old: labelledPod(), object: manyRequirements(labelledPod(), longList)},
		{name: "a tenant adds many affinity terms by update", op: admissionregistrationv1.Update, user: tenant,
			old: labelledPod(), object: manyTerms(labelledPod(), longList)},
		{name: "a tenant updates a pod with long lists", op: admissionregistrationv1.Update, user: tenant,
			old: longLists(labelledPod(), longList), object: withAnnotation(longLists(labelledPod(), longList))},
		{name: "Muster marks an unlabelled pod with long lists for preemption", op: admissionregistrationv1.Update, subResource: "status", user: muster,
			old: longLists(unlabelledPod(), longList), object: withDisruptionTarget(longLists(unlabelledPod(), longList))},
		{name: "Muster deletes an unlabelled pod with long lists", op: admissionregistrationv1.Delete, user: muster,
			old: withDisruptionTarget(longLists(unlabelledPod(), longList))},
		{name: "Muster takes its finalizer off a labelled pod at the bounds", op: admissionregistrationv1.Update, user: muster,
			old: atBounds(labelledPod()), object: withoutFinalizer(atBounds(labelledPod()))},
		{name: "Muster ungates a labelled pod at the bounds", op: admissionregistrationv1.Update, user: muster,
			old: atBounds(labelledPod()), object: ungated(atBounds(labelledPod()))},
	}
	exprs := admissionExpressions()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			request := map[string]any{"operation": string(tt.op), "subResource": tt.subResource, "userInfo": tt.user}
			act := map[string]any{"request": request, "object": nil, "oldObject": nil}
			if tt.object != nil {
				act["object"] = unstructuredPod(t, tt.object)
			}
			if tt.old != nil {
				act["oldObject"] = unstructuredPod(t, tt.old)
			}
			for _, set := range exprs {
				if !set.matches(tt.op, tt.subResource) {
					continue
				}
				vars := map[string]any{}
				act["variables"] = vars
				if !set.conditionsHold(t, act) {
					continue
				}
				for _, v := range set.variables {
					val, calls := countCalls(t, v.expr, act)
					if calls > maxCalls {
						t.Errorf("%s, variable %s: %d calls, more than %d", set.name, v.name, calls, maxCalls)
					}
					vars[v.name] = val
				}
				for _, e := range set.exprs {
					if _, calls := countCalls(t, e.expr, act); calls > maxCalls {
						t.Errorf("%s, %s: %d calls, more than %d: %.200s", set.name, e.name, calls, maxCalls, e.expr)
					}
				}
			}
		})
	}
}

// TestCallCountingSeesComprehensions: the count above grows with a
// comprehension's list, and not with a lookup's.
func TestCallCountingSeesComprehensions(t *testing.T) {
	const n = 10_000
	pod := unstructuredPod(t, longLists(unlabelledPod(), n))
	act := map[string]any{"object": pod, "oldObject": nil, "request": map[string]any{}, "variables": map[string]any{}}
	if _, calls := countCalls(t, "object.metadata.finalizers.exists(f, f == 'x')", act); calls < n {
		t.Errorf("exists over %d finalizers: %d calls, want at least %d", n, calls, n)
	}
	if _, calls := countCalls(t, "'x' in object.metadata.finalizers", act); calls > 10 {
		t.Errorf("in over %d finalizers: %d calls, want at most 10", n, calls)
	}
}

// namedExpr is one expression of a policy or webhook.
type namedExpr struct{ name, expr string }

// exprSet is a policy's or webhook's expressions, its variables first.
type exprSet struct {
	name       string
	rules      []admissionregistrationv1.RuleWithOperations
	conditions []namedExpr
	variables  []namedExpr
	exprs      []namedExpr
}

// matches holds when the set's rules match op on pods or subResource.
func (s exprSet) matches(op admissionregistrationv1.OperationType, subResource string) bool {
	resource := "pods"
	if subResource != "" {
		resource += "/" + subResource
	}
	for _, r := range s.rules {
		if slices.Contains(r.Operations, op) && slices.Contains(r.Resources, resource) {
			return true
		}
	}
	return false
}

// conditionsHold evaluates the set's match conditions, counting their
// calls too. A condition that fails to evaluate holds: here that is a
// call on the authorizer, which only Muster's own requests reach.
func (s exprSet) conditionsHold(t *testing.T, act map[string]any) bool {
	t.Helper()
	for _, c := range s.conditions {
		val, calls := countCalls(t, c.expr, act)
		if calls > maxCalls {
			t.Errorf("%s, %s: %d calls, more than %d: %.200s", s.name, c.name, calls, maxCalls, c.expr)
		}
		if val == types.False {
			return false
		}
	}
	return true
}

// admissionExpressions are the expressions of every policy this package
// builds and of the webhooks' match conditions. The mutating policy's
// patch is left out: it builds typed objects that only kube-apiserver's
// type checker resolves; its lookups are celHasGate and celListHas, which
// its match condition runs here.
func admissionExpressions() []exprSet {
	var sets []exprSet
	add := func(name string, rules []admissionregistrationv1.RuleWithOperations, conditions []admissionregistrationv1.MatchCondition,
		vars []admissionregistrationv1.Variable, validations []admissionregistrationv1.Validation) {
		s := exprSet{name: name, rules: rules}
		for _, v := range vars {
			s.variables = append(s.variables, namedExpr{v.Name, v.Expression})
		}
		for _, c := range conditions {
			s.conditions = append(s.conditions, namedExpr{"match condition " + c.Name, c.Expression})
		}
		for i, v := range validations {
			s.exprs = append(s.exprs, namedExpr{fmt.Sprintf("validation %d", i), v.Expression})
			if v.MessageExpression != "" {
				s.exprs = append(s.exprs, namedExpr{fmt.Sprintf("validation %d's message", i), v.MessageExpression})
			}
		}
		sets = append(sets, s)
	}
	policyRules := func(m *admissionregistrationv1.MatchResources) []admissionregistrationv1.RuleWithOperations {
		var rules []admissionregistrationv1.RuleWithOperations
		for _, r := range m.ResourceRules {
			rules = append(rules, r.RuleWithOperations)
		}
		return rules
	}
	for _, p := range ValidatingPolicies() {
		add(p.Policy.Name, policyRules(p.Policy.Spec.MatchConstraints), p.Policy.Spec.MatchConditions, p.Policy.Spec.Variables, p.Policy.Spec.Validations)
	}
	prepare := PreparePolicy()
	add(prepare.Name, policyRules(prepare.Spec.MatchConstraints), prepare.Spec.MatchConditions, prepare.Spec.Variables, nil)
	cfg := Config{Service: &ServiceReference{Namespace: "muster-system", Name: WebhookService, Port: DefaultPort}, ValidateUpdates: true}
	mutating, err := MutatingWebhookConfiguration(cfg)
	if err != nil {
		panic(err)
	}
	for _, w := range mutating.Webhooks {
		add(w.Name, w.Rules, w.MatchConditions, nil, nil)
	}
	cfg.ValidateUpdates = false
	validating, err := ValidatingWebhookConfiguration(cfg)
	if err != nil {
		panic(err)
	}
	for _, w := range validating.Webhooks {
		add(w.Name, w.Rules, w.MatchConditions, nil, nil)
	}
	return sets
}

// callCounter counts the calls of one evaluation; it leaves their cost to
// cel-go's defaults.
type callCounter struct{ calls int }

func (c *callCounter) CallCost(string, string, []ref.Val, ref.Val) *uint64 {
	c.calls++
	return nil
}

// countCalls evaluates expr, parsed in kube-apiserver's CEL environment
// with its variables untyped, on act, and returns its value and how many
// calls it made.
func countCalls(t *testing.T, expr string, act map[string]any) (ref.Val, int) {
	t.Helper()
	env, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).StoredExpressionsEnv().Extend(
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("variables", cel.DynType),
		cel.Variable("authorizer", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Parse(expr)
	if iss.Err() != nil {
		t.Fatalf("parsing %.200s: %v", expr, iss.Err())
	}
	counter := &callCounter{}
	prg, err := env.Program(ast, cel.CostTracking(counter))
	if err != nil {
		t.Fatalf("planning %.200s: %v", expr, err)
	}
	// An error ends the evaluation, with the calls made so far counted:
	// the variables are untyped here, and evaluated whether or not a
	// validation reads them, so some fail (an absent field, a null old
	// object) that kube-apiserver never evaluates; the evalPolicy tests
	// check what the policies decide.
	val, _, _ := prg.Eval(act)
	if val == nil {
		val = types.NullValue
	}
	return val, counter.calls
}

func unstructuredPod(t *testing.T, p *corev1.Pod) map[string]any {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// labelledPod is a gated pod of a group, as Muster's webhook leaves it.
func labelledPod() *corev1.Pod {
	p := unlabelledPod()
	p.Labels = map[string]string{scheduling.PodGroupLabel: "g", scheduling.ManagedLabel: "true"}
	p.Finalizers = []string{scheduling.TrackingFinalizer}
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}}
	return p
}

func unlabelledPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
}

// longLists gives p n labels, finalizers, scheduling gates, node affinity
// values and tolerations, before those it has: a lookup of Muster's own
// finalizer or gate goes through them all.
func longLists(p *corev1.Pod, n int) *corev1.Pod {
	values := make([]string, n)
	var finalizers []string
	var gates []corev1.PodSchedulingGate
	for i := range n {
		s := fmt.Sprint(i)
		values[i] = s
		p.Labels["l"+s] = s
		finalizers = append(finalizers, "example.com/f"+s)
		gates = append(gates, corev1.PodSchedulingGate{Name: "example.com/g" + s})
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "t" + s, Operator: corev1.TolerationOpExists})
	}
	p.Finalizers = append(finalizers, p.Finalizers...)
	p.Spec.SchedulingGates = append(gates, p.Spec.SchedulingGates...)
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values}}}},
	}}}
	return p
}

// manyRequirements gives p one required node affinity term of n
// requirements.
func manyRequirements(p *corev1.Pod, n int) *corev1.Pod {
	reqs := make([]corev1.NodeSelectorRequirement, n)
	for i := range reqs {
		reqs[i] = corev1.NodeSelectorRequirement{Key: fmt.Sprint("k", i), Operator: corev1.NodeSelectorOpExists}
	}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}},
	}}}
	return p
}

// manyTerms gives p n required node affinity terms of one requirement.
func manyTerms(p *corev1.Pod, n int) *corev1.Pod {
	terms := make([]corev1.NodeSelectorTerm, n)
	for i := range terms {
		terms[i] = corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: fmt.Sprint("k", i), Operator: corev1.NodeSelectorOpExists}}}
	}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	return p
}

// atBounds gives a labelled pod as many finalizers and gates as
// muster-pod-labels lets it have.
func atBounds(p *corev1.Pod) *corev1.Pod {
	var finalizers []string
	for i := len(p.Finalizers); i < scheduling.MaxPodFinalizers; i++ {
		finalizers = append(finalizers, fmt.Sprint("example.com/f", i))
	}
	p.Finalizers = append(finalizers, p.Finalizers...)
	var gates []corev1.PodSchedulingGate
	for i := len(p.Spec.SchedulingGates); i < scheduling.MaxPodSchedulingGates; i++ {
		gates = append(gates, corev1.PodSchedulingGate{Name: fmt.Sprint("example.com/g", i)})
	}
	p.Spec.SchedulingGates = append(gates, p.Spec.SchedulingGates...)
	return p
}

// longTopology gives p topology annotations of about n characters each:
// n preferred levels, or, when four, 4 levels of n characters.
func longTopology(p *corev1.Pod, n int, four bool) *corev1.Pod {
	long := strings.Repeat("a", n)
	preferred := strings.Repeat("a,", n) + "a"
	if four {
		preferred = strings.Join([]string{long, long + "b", long + "c", long + "d"}, ",")
	}
	p.Annotations = map[string]string{
		scheduling.TopologyRequiredAnnotation:  long,
		scheduling.TopologyPreferredAnnotation: preferred,
		scheduling.TopologySliceKeyAnnotation:  long,
		scheduling.TopologySliceSizeAnnotation: strings.Repeat("0", n) + "1",
	}
	return p
}

func withAnnotation(p *corev1.Pod) *corev1.Pod {
	p.Annotations = map[string]string{"example.com/touched": "true"}
	return p
}

func withDisruptionTarget(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: scheduling.ReasonPreemptionByMuster,
	})
	return p
}

func withoutFinalizer(p *corev1.Pod) *corev1.Pod {
	var kept []string
	for _, f := range p.Finalizers {
		if f != scheduling.TrackingFinalizer {
			kept = append(kept, f)
		}
	}
	p.Finalizers = kept
	return p
}

func ungated(p *corev1.Pod) *corev1.Pod {
	var kept []corev1.PodSchedulingGate
	for _, g := range p.Spec.SchedulingGates {
		if g.Name != scheduling.AdmissionGate {
			kept = append(kept, g)
		}
	}
	p.Spec.SchedulingGates = kept
	return p
}

// BenchmarkPolicyOnLongLists runs muster-pod-labels, compiled and evaluated
// as kube-apiserver does (evalPolicy), on a tenant's update of a labelled
// pod that gives it n finalizers, gates, labels and node affinity values:
// the time is kube-apiserver's CPU per such request.
func BenchmarkPolicyOnLongLists(b *testing.B) {
	var labels *admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range ValidatingPolicies() {
		if p.Policy.Name == LabelsPolicyName {
			labels = p.Policy
		}
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			r := policyRequest{op: admission.Update, object: longLists(labelledPod(), n), oldObject: labelledPod(), user: &user.DefaultInfo{Name: "alice"}}
			for b.Loop() {
				if _, denied := evalPolicy(b, labels, r); len(denied) == 0 {
					b.Fatal("the update was allowed")
				}
			}
		})
	}
}
