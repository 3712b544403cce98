package manifests

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Policies are evaluated here in process, compiled and run as
// kube-apiserver's ValidatingAdmissionPolicy plugin compiles and runs them
// (k8s.io/apiserver's compilePolicy and Validator), so that a rule's unit
// test exercises the CEL the cluster runs. Matching by resource, operation
// and selector is not: the e2e tests cover it.

// policyRequest is one pod request a policy is evaluated on.
type policyRequest struct {
	op          admission.Operation
	subResource string
	// object is nil on a delete; oldObject on a create.
	object, oldObject *corev1.Pod
	user              user.Info
}

// musterAccount is a request's user as Muster's controller: a service
// account that the authorizer grants ConfinedVerb on ConfinedResource.
var musterAccount = serviceaccount.UserInfo("muster-system", "muster-apiserver", "")

// evalPolicy evaluates p on r. matched is false when p's match conditions
// leave the request alone; denied are the messages of the validations that
// deny it. An expression that fails to compile or to evaluate fails the
// test: under failurePolicy Fail it would deny, but for no rule's reason.
func evalPolicy(t testing.TB, p *admissionregistrationv1.ValidatingAdmissionPolicy, r policyRequest) (matched bool, denied []string) {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	withAuthorizer := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	vars := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(vars, withAuthorizer, environment.StoredExpressions)
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	conditions := make([]plugincel.ExpressionAccessor, len(p.Spec.MatchConditions))
	for i := range p.Spec.MatchConditions {
		conditions[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
	}
	var matcher matchconditions.Matcher
	if len(conditions) > 0 {
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conditions, withAuthorizer, environment.StoredExpressions),
			p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	validator := validating.NewValidator(
		compiler.CompileCondition(validations, withAuthorizer, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, withAuthorizer, environment.StoredExpressions),
		compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions),
		p.Spec.FailurePolicy, nil)
	if err := validator.CompileError(); err != nil {
		t.Fatalf("compiling policy %s: %v", p.Name, err)
	}

	pods := corev1.SchemeGroupVersion.WithResource("pods")
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	name, ns := "", ""
	for _, pod := range []*corev1.Pod{r.object, r.oldObject} {
		if pod != nil {
			name, ns = pod.Name, pod.Namespace
		}
	}
	// Untyped nils: a nil *Pod would be an object that is not null.
	var object, oldObject runtime.Object
	if r.object != nil {
		object = r.object
	}
	if r.oldObject != nil {
		oldObject = r.oldObject
	}
	attrs := admission.NewAttributesRecord(object, oldObject, kind, ns, name, pods, r.subResource, r.op, nil, false, r.user)
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: kind}
	if object != nil {
		versioned.VersionedObject.Set(object)
	}
	if oldObject != nil {
		versioned.VersionedOldObject.Set(oldObject)
	}
	result := validator.Validate(context.Background(), pods, versioned, nil, nil, celconfig.RuntimeCELCostBudget, confinedAuthorizer{})
	for _, d := range result.Decisions {
		switch {
		case d.Evaluation == validating.EvalError:
			t.Errorf("policy %s failed to evaluate: %s", p.Name, d.Message)
		case d.Action == validating.ActionDeny:
			denied = append(denied, d.Message)
		}
	}
	return len(result.Decisions) > 0, denied
}

// deniedFields is the field each denial names, in order: what comes before
// ": Forbidden".
func deniedFields(denied []string) []string {
	var fields []string
	for _, d := range denied {
		field, _, _ := strings.Cut(d, ": Forbidden")
		fields = append(fields, field)
	}
	return fields
}

// confinedAuthorizer is the cluster's RBAC as the policies see it: Muster's
// service account holds ConfinedVerb on ConfinedResource, and nobody holds
// UngrantedVerb.
type confinedAuthorizer struct{}

func (confinedAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == musterAccount.GetName() && a.GetAPIGroup() == scheduling.GroupName &&
		a.GetResource() == ConfinedResource && a.GetVerb() == ConfinedVerb {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}
