package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/podgroup"
	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// servesAdmissionPolicies reports whether kube-apiserver serves
// ValidatingAdmissionPolicy and MutatingAdmissionPolicy in
// admissionregistration.k8s.io/v1 (GA in 1.30 and 1.36).
func (c *Cluster) servesAdmissionPolicies() (validating, mutating bool, err error) {
	resources, err := c.Client.Discovery().ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if err != nil {
		return false, false, fmt.Errorf("discovering %s: %w", admissionregistrationv1.SchemeGroupVersion, err)
	}
	for _, r := range resources.APIResources {
		switch r.Name {
		case "validatingadmissionpolicies":
			validating = true
		case "mutatingadmissionpolicies":
			mutating = true
		}
	}
	return validating, mutating, nil
}

// registerPreparePolicy creates the MutatingAdmissionPolicy that prepares
// new pods in kube-apiserver, as the chart's preparePolicy.enabled does.
func (c *Cluster) registerPreparePolicy(ctx context.Context) error {
	api := c.Client.AdmissionregistrationV1()
	if _, err := api.MutatingAdmissionPolicies().Create(ctx, pods.PreparePolicy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating policy %s: %w", pods.PreparePolicyName, err)
	}
	if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, pods.PreparePolicyBinding(pods.Config{}), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating policy binding %s: %w", pods.PreparePolicyName, err)
	}
	return nil
}

// registerPolicies creates Muster's ValidatingAdmissionPolicies and their
// bindings, as charts/muster/files/policies.yaml does.
func (c *Cluster) registerPolicies(ctx context.Context) error {
	if err := c.createPolicy(ctx, pods.LabelsPolicy(), pods.PolicyBinding(pods.Config{}, pods.LabelsPolicyName)); err != nil {
		return err
	}
	if err := c.createPolicy(ctx, podgroup.OrderedReadyPolicy(), podgroup.OrderedReadyPolicyBinding()); err != nil {
		return err
	}
	if err := c.createPolicy(ctx, pods.QuotaWritesPolicy(), pods.QuotaWritesPolicyBinding()); err != nil {
		return err
	}
	if err := c.createPolicy(ctx, pods.WritesPolicy(), pods.WritesPolicyBinding()); err != nil {
		return err
	}
	if err := c.createPolicy(ctx, pods.CreatesPolicy(), pods.CreatesPolicyBinding()); err != nil {
		return err
	}
	return c.waitPolicyEnforced(ctx)
}

// waitPolicyEnforced waits until kube-apiserver enforces muster-pod-labels:
// it loads policies from an informer and compiles them, so a pod created
// at once could go unchecked. The probe is a dry-run create of a labelled
// pod with a min-count the policy refuses; nothing is stored.
func (c *Cluster) waitPolicyEnforced(ctx context.Context) error {
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "muster-policy-probe", Namespace: metav1.NamespaceDefault,
			Labels:      map[string]string{scheduling.PodGroupLabel: "probe"},
			Annotations: map[string]string{scheduling.MinCountAnnotation: "0"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10"}}},
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = c.Client.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), pods.LabelsPolicyName), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-apiserver to enforce %s (last answer: %v): %w", pods.LabelsPolicyName, last, err)
	}
	return nil
}

// createPolicy creates a ValidatingAdmissionPolicy and its binding, leaving
// those that exist already as they are.
func (c *Cluster) createPolicy(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) error {
	api := c.Client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating policy %s: %w", p.Name, err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating policy binding %s: %w", b.Name, err)
	}
	return nil
}
