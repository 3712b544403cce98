package manifests

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestOrderedReadyPolicyOnlyWarns checks what the admission warning may
// never do, and where it applies: it never denies (its only action is Warn,
// and an evaluation failure is ignored), and it selects the namespaces the
// controller manages by default (scheduling.DefaultNamespaceSelector, the
// controller's default --namespace-selector).
func TestOrderedReadyPolicyOnlyWarns(t *testing.T) {
	p, b := OrderedReadyPolicy(), OrderedReadyPolicyBinding()
	if fp := p.Spec.FailurePolicy; fp == nil || *fp != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy = %v, want Ignore: a warning must never block a StatefulSet", fp)
	}
	if got := b.Spec.ValidationActions; !slices.Equal(got, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}) {
		t.Errorf("validationActions = %v, want [Warn]", got)
	}
	if b.Spec.PolicyName != p.Name {
		t.Errorf("binding names policy %q, want %q", b.Spec.PolicyName, p.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.MatchResources.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	want, err := labels.Parse(scheduling.DefaultNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	if sel.String() != want.String() {
		t.Errorf("binding selects namespaces %q, the controller %q; want one selector", sel, want)
	}
}
