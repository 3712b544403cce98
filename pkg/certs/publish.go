package certs

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Targets name the objects whose caBundle Muster keeps; an empty name is
// left alone.
type Targets struct {
	// APIService is Muster's APIService, v1alpha1.scheduling.muster.dev.
	APIService string
	// WebhookConfigurations names both the mutating and the validating
	// webhook configuration; every webhook in them gets the bundle.
	WebhookConfigurations string
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// publisher writes the bundle into the targets. Each write is a read and
// an update with the read's resourceVersion, and only when the bundle
// differs, so a replica that holds an older Secret never overwrites a newer
// bundle with a stale read, and an unchanged bundle costs three reads.
type publisher struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	targets Targets
}

// publish writes bundle into every target that exists. A target that does
// not exist (not installed yet, or not installed at all) is skipped: it
// trusts nothing, so it cannot be broken by a rotation either.
func (p *publisher) publish(ctx context.Context, bundle []byte) error {
	var errs []error
	if p.targets.APIService != "" {
		errs = append(errs, p.publishAPIService(ctx, bundle))
	}
	if p.targets.WebhookConfigurations != "" {
		errs = append(errs, p.publishMutating(ctx, bundle), p.publishValidating(ctx, bundle))
	}
	return errors.Join(errs...)
}

func (p *publisher) publishAPIService(ctx context.Context, bundle []byte) error {
	client := p.dynamic.Resource(apiServices)
	obj, err := client.Get(ctx, p.targets.APIService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(4).Info("No APIService to publish the CA bundle to", "apiService", p.targets.APIService)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading APIService %s: %w", p.targets.APIService, err)
	}
	old, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
	if decoded, err := base64.StdEncoding.DecodeString(old); err == nil && bytes.Equal(decoded, bundle) {
		return nil
	}
	if err := unstructured.SetNestedField(obj.Object, base64.StdEncoding.EncodeToString(bundle), "spec", "caBundle"); err != nil {
		return fmt.Errorf("setting caBundle of APIService %s: %w", p.targets.APIService, err)
	}
	// The aggregator refuses a caBundle beside insecureSkipTLSVerify, and
	// Muster's APIService never skips verification.
	unstructured.RemoveNestedField(obj.Object, "spec", "insecureSkipTLSVerify")
	if _, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("writing caBundle of APIService %s: %w", p.targets.APIService, err)
	}
	klog.FromContext(ctx).Info("Published the CA bundle", "apiService", p.targets.APIService)
	return nil
}

func (p *publisher) publishMutating(ctx context.Context, bundle []byte) error {
	client := p.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	return publishWebhooks(ctx, "MutatingWebhookConfiguration", p.targets.WebhookConfigurations, bundle, client.Get, client.Update,
		func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
			var out []*admissionregistrationv1.WebhookClientConfig
			for i := range cfg.Webhooks {
				out = append(out, &cfg.Webhooks[i].ClientConfig)
			}
			return out
		})
}

func (p *publisher) publishValidating(ctx context.Context, bundle []byte) error {
	client := p.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	return publishWebhooks(ctx, "ValidatingWebhookConfiguration", p.targets.WebhookConfigurations, bundle, client.Get, client.Update,
		func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
			var out []*admissionregistrationv1.WebhookClientConfig
			for i := range cfg.Webhooks {
				out = append(out, &cfg.Webhooks[i].ClientConfig)
			}
			return out
		})
}

// publishWebhooks sets the caBundle of every webhook of the webhook
// configuration kind/name (its clientConfigs) to bundle, with one update
// when any differs; a configuration that does not exist is left alone.
func publishWebhooks[T metav1.Object](ctx context.Context, kind, name string, bundle []byte,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	clientConfigs func(T) []*admissionregistrationv1.WebhookClientConfig) error {
	cfg, err := get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	changed := false
	for _, cc := range clientConfigs(cfg) {
		if !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle, changed = bundle, true
		}
	}
	if !changed {
		return nil
	}
	if _, err := update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("writing caBundle of %s %s: %w", kind, name, err)
	}
	klog.FromContext(ctx).Info("Published the CA bundle", "kind", kind, "name", name)
	return nil
}
