package cluster

import (
	"context"
	"fmt"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/webhook/pods"
)

// registerWebhooks registers Muster's pod webhooks with kube-apiserver,
// pointing at the local process by URL and trusting it through caBundle.
// They are built by the same code that documents the deployed ones.
func (c *Cluster) registerWebhooks(ctx context.Context) error {
	caBundle, err := os.ReadFile(c.pki.CACert)
	if err != nil {
		return fmt.Errorf("reading CA bundle: %w", err)
	}
	cfg := pods.Config{URL: c.MusterURL, CABundle: caBundle}
	mutating, err := pods.MutatingWebhookConfiguration(cfg)
	if err != nil {
		return err
	}
	validating, err := pods.ValidatingWebhookConfiguration(cfg)
	if err != nil {
		return err
	}
	admission := c.Client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering mutating pod webhook: %w", err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering validating pod webhook: %w", err)
	}
	return nil
}
