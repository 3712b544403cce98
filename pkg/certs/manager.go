package certs

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// fieldManager names Muster's writes of the Secret and the caBundles.
const fieldManager = "muster-apiserver-certificates"

// Manager keeps the Secret, the served certificate and the published
// bundle in step. Every replica runs one; the Secret is the one source of
// truth, and a replica serves only what the Secret holds.
type Manager struct {
	kube            kubernetes.Interface
	namespace, name string
	cfg             Config
	publisher       *publisher
	content         *ServingContent
	now             func() time.Time
	resync          time.Duration

	trigger chan struct{}
	secrets corelisters.SecretLister
	// last is the state this replica last read or wrote: if the Secret is
	// deleted, it is recreated from it, with the same CAs, so that what
	// kube-apiserver trusts and what replicas serve stays valid.
	last *State
	// trust is the CA bundle of the state this replica serves from, for
	// its own clients of the other replicas (Trust).
	trust atomic.Pointer[[]byte]
}

// New returns a Manager of the Secret namespace/name, which serves its
// certificate through content.
func New(kube kubernetes.Interface, dyn dynamic.Interface, namespace, name string, cfg Config, targets Targets, content *ServingContent) *Manager {
	return &Manager{
		kube:      kube,
		namespace: namespace,
		name:      name,
		cfg:       cfg,
		publisher: &publisher{kube: kube, dynamic: dyn, targets: targets},
		content:   content,
		now:       time.Now,
		resync:    ResyncPeriod(cfg.Lifetime),
		trigger:   make(chan struct{}, 1),
	}
}

// ResyncPeriod is how often a Manager checks the Secret and the caBundles
// without being told of a change: a thirtieth of the serving certificate's
// lifetime, between a second and a minute. It bounds how long a caBundle
// overwritten by someone else (an upgrade that renders one) stays wrong.
func ResyncPeriod(lifetime time.Duration) time.Duration {
	return min(max(lifetime/30, time.Second), time.Minute)
}

// Content is the serving certificate provider to give the API's secure
// serving and the webhook listener.
func (m *Manager) Content() *ServingContent { return m.content }

// Trust is the CA bundle that the serving certificates of every replica
// chain to, as kube-apiserver's caBundle trusts them: what a replica
// verifies another with. Nil until a certificate is served.
func (m *Manager) Trust() []byte {
	if b := m.trust.Load(); b != nil {
		return *b
	}
	return nil
}

// Start watches the Secret and keeps everything in step until ctx ends. It
// returns once a serving certificate is loaded, or with an error if none is
// within timeout.
func (m *Manager) Start(ctx context.Context, timeout time.Duration) error {
	logger := klog.FromContext(ctx).WithName("certificates")
	ctx = klog.NewContext(ctx, logger)
	factory := informers.NewSharedInformerFactoryWithOptions(m.kube, 0,
		informers.WithNamespace(m.namespace),
		// One object, watched by name: RBAC grants list and watch on it by
		// resourceNames, and on no other Secret.
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", m.name).String()
		}))
	secrets := factory.Core().V1().Secrets()
	if _, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.poke() },
		UpdateFunc: func(any, any) { m.poke() },
		DeleteFunc: func(any) { m.poke() },
	}); err != nil {
		return fmt.Errorf("watching Secret %s/%s: %w", m.namespace, m.name, err)
	}
	m.secrets = secrets.Lister()
	factory.Start(ctx.Done())
	go func() { <-ctx.Done(); factory.Shutdown() }()
	if err := m.watchTargets(ctx); err != nil {
		return err
	}
	// A Secret that cannot be read (RBAC) must fail the start, not hang it.
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), secrets.Informer().HasSynced) {
		return fmt.Errorf("reading Secret %s/%s within %s (may the server list and watch it?)", m.namespace, m.name, timeout)
	}
	go m.run(ctx)

	err := wait.PollUntilContextCancel(syncCtx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return m.content.loaded(), nil
	})
	if err != nil {
		return fmt.Errorf("no serving certificate from Secret %s/%s within %s (see the errors above): %w", m.namespace, m.name, timeout, err)
	}
	return nil
}

// watchTargets syncs whenever the APIService or a webhook configuration
// changes, each watched by name: an upgrade or an apply that blanks a
// caBundle is repaired at once, not at the next resync.
func (m *Manager) watchTargets(ctx context.Context) error {
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.poke() },
		UpdateFunc: func(any, any) { m.poke() },
	}
	byName := func(name string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}
	}
	if name := m.publisher.targets.APIService; name != "" {
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(m.publisher.dynamic, 0, "", byName(name))
		if _, err := factory.ForResource(apiServices).Informer().AddEventHandler(handler); err != nil {
			return fmt.Errorf("watching APIService %s: %w", name, err)
		}
		factory.Start(ctx.Done())
		go func() { <-ctx.Done(); factory.Shutdown() }()
	}
	if name := m.publisher.targets.WebhookConfigurations; name != "" {
		factory := informers.NewSharedInformerFactoryWithOptions(m.kube, 0, informers.WithTweakListOptions(byName(name)))
		admission := factory.Admissionregistration().V1()
		for _, informer := range []cache.SharedIndexInformer{admission.MutatingWebhookConfigurations().Informer(), admission.ValidatingWebhookConfigurations().Informer()} {
			if _, err := informer.AddEventHandler(handler); err != nil {
				return fmt.Errorf("watching webhook configurations %s: %w", name, err)
			}
		}
		factory.Start(ctx.Done())
		go func() { <-ctx.Done(); factory.Shutdown() }()
	}
	return nil
}

// poke asks the loop to sync now.
func (m *Manager) poke() {
	select {
	case m.trigger <- struct{}{}:
	default:
	}
}

// run syncs on every change of the Secret, every resync period, and a
// second after a failed sync, until ctx ends.
func (m *Manager) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(m.resync)
	defer ticker.Stop()
	for {
		var retry <-chan time.Time
		if err := m.sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "Syncing certificates; retrying", "secret", klog.KRef(m.namespace, m.name))
			retry = time.After(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.trigger:
		case <-ticker.C:
		case <-retry:
		}
	}
}

// sync publishes the bundle the Secret holds, rotates what Plan says is
// due with the Secret's resourceVersion as precondition, publishes again
// if the bundle changed, and serves the Secret's serving certificate.
func (m *Manager) sync(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	now := m.now()
	secret, err := m.secrets.Secrets(m.namespace).Get(m.name)
	if apierrors.IsNotFound(err) {
		return m.create(ctx, now)
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", m.namespace, m.name, err)
	}
	state, loadErrs := Load(secret.Data)
	for _, err := range loadErrs {
		logger.Error(err, "Secret holds an unusable part; it is replaced", "secret", klog.KObj(secret))
	}
	// Trust first: Plan lets a next CA sign only once the bundle holding
	// it is published.
	bundle := state.Bundle(time.Time{})
	pubErr := m.publisher.publish(ctx, bundle)
	published := func(c Certificate) bool { return pubErr == nil && bundleHolds(bundle, c) }
	next, why, err := Plan(now, state, m.cfg, published)
	if err != nil {
		return errors.Join(pubErr, err)
	}
	if next != nil {
		updated := secret.DeepCopy()
		updated.Data = next.Data()
		// The update carries the resourceVersion read: a replica that
		// rotated first wins, and this one re-reads and finds nothing due.
		if _, err := m.kube.CoreV1().Secrets(m.namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			m.serve(ctx, state)
			if apierrors.IsConflict(err) {
				// The winner's write reaches the informer, which syncs again.
				logger.V(2).Info("Another replica rotated first; re-reading", "secret", klog.KObj(secret))
				return pubErr
			}
			return errors.Join(pubErr, fmt.Errorf("writing Secret %s/%s: %w", m.namespace, m.name, err))
		}
		logger.Info("Rotated certificates", "secret", klog.KObj(secret), "why", why)
		state = next
		pubErr = m.publisher.publish(ctx, state.Bundle(time.Time{}))
	}
	m.serve(ctx, state)
	return pubErr
}

// create makes the Secret: from the state this replica last saw, if the
// Secret was deleted under it, else from nothing. If another replica
// creates it first, this one loads theirs.
func (m *Manager) create(ctx context.Context, now time.Time) error {
	logger := klog.FromContext(ctx)
	state := &State{}
	if m.last != nil {
		state = m.last
	}
	next, why, err := Plan(now, state, m.cfg, func(Certificate) bool { return false })
	if err != nil {
		return err
	}
	if next == nil {
		next = state
	}
	secret := newSecretObject(m.namespace, m.name, next.Data())
	if _, err := m.kube.CoreV1().Secrets(m.namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("another replica created Secret %s/%s first; loading it", m.namespace, m.name)
		}
		return fmt.Errorf("creating Secret %s/%s: %w", m.namespace, m.name, err)
	}
	logger.Info("Created the certificates Secret", "secret", klog.KObj(secret), "fromMemory", m.last != nil, "why", why)
	pubErr := m.publisher.publish(ctx, next.Bundle(time.Time{}))
	m.serve(ctx, next)
	return pubErr
}

// serve serves the state's serving certificate, if it has a valid one
// signed by one of its CAs.
func (m *Manager) serve(ctx context.Context, state *State) {
	if state.Serving == nil || state.CA == nil || state.Serving.Cert.CheckSignatureFrom(state.CA.Cert) != nil {
		return
	}
	m.last = state
	bundle := state.Bundle(m.now())
	m.trust.Store(&bundle)
	if m.content.set(state.Serving) {
		klog.FromContext(ctx).Info("Serving certificate loaded", "certificate", describe(state.Serving.Cert))
	}
}

// newSecretObject is the Secret Muster creates.
func newSecretObject(namespace, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":       "muster-apiserver",
				"app.kubernetes.io/component":  "certificates",
				"app.kubernetes.io/managed-by": "muster-apiserver",
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}
