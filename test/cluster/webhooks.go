package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/manifests"
)

// registerWebhooks registers Muster's pod webhooks with kube-apiserver,
// pointing at the local process by URL and trusting it through caBundle,
// and Muster's admission policies where the cluster serves them (else the
// validating webhook checks updates); with Options.PreparePolicy, the
// policy that prepares new pods too. They are built by the same code that
// documents the deployed ones.
func (c *Cluster) registerWebhooks(ctx context.Context) error {
	if !c.opts.MusterByHand {
		return c.waitChartPolicies(ctx)
	}
	validating, mutating, err := c.servesAdmissionPolicies()
	if err != nil {
		return err
	}
	c.webhookValidatesUpdates = !validating
	if validating {
		if err := c.registerPolicies(ctx); err != nil {
			return err
		}
	}
	if mutating && c.opts.PreparePolicy {
		if err := c.registerPreparePolicy(ctx); err != nil {
			return err
		}
	}
	return c.PointWebhooksAt(ctx, c.MusterURL)
}

// PointWebhooksAt registers Muster's pod webhooks, or re-points them, at the
// webhook listener of the muster-apiserver serving the API at baseURL
// (MusterURL, or a replica's URL), as a Service would route to whichever
// replica is up.
func (c *Cluster) PointWebhooksAt(ctx context.Context, baseURL string) error {
	c.mu.Lock()
	webhookURL, ok := c.webhookURLs[baseURL]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no Muster serves its API at %s", baseURL)
	}
	if !c.opts.MusterByHand {
		return c.pointChartWebhooksAt(ctx, webhookURL)
	}
	caBundle, err := c.musterCABundle()
	if err != nil {
		return err
	}
	cfg := manifests.Config{URL: webhookURL, CABundle: caBundle, ValidateUpdates: c.webhookValidatesUpdates}
	mutating, err := manifests.MutatingWebhookConfiguration(cfg)
	if err != nil {
		return err
	}
	validating, err := manifests.ValidatingWebhookConfiguration(cfg)
	if err != nil {
		return err
	}
	admission := c.Client.AdmissionregistrationV1()
	mutatingAPI, validatingAPI := admission.MutatingWebhookConfigurations(), admission.ValidatingWebhookConfigurations()
	if old, err := mutatingAPI.Get(ctx, mutating.Name, metav1.GetOptions{}); err == nil {
		mutating.ResourceVersion = old.ResourceVersion
		if caBundle == nil && len(old.Webhooks) > 0 {
			// Muster keeps the caBundle: re-pointing must not blank it.
			mutating.Webhooks[0].ClientConfig.CABundle = old.Webhooks[0].ClientConfig.CABundle
		}
		_, err = mutatingAPI.Update(ctx, mutating, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("re-pointing mutating pod webhook: %w", err)
		}
	} else if _, err := mutatingAPI.Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering mutating pod webhook: %w", err)
	}
	if old, err := validatingAPI.Get(ctx, validating.Name, metav1.GetOptions{}); err == nil {
		validating.ResourceVersion = old.ResourceVersion
		if caBundle == nil && len(old.Webhooks) > 0 {
			validating.Webhooks[0].ClientConfig.CABundle = old.Webhooks[0].ClientConfig.CABundle
		}
		_, err = validatingAPI.Update(ctx, validating, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("re-pointing validating pod webhook: %w", err)
		}
	} else if _, err := validatingAPI.Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering validating pod webhook: %w", err)
	}
	return nil
}
