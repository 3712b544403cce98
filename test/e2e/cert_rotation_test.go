package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/certs"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/test/cluster"
)

// Lifetimes of minutes, so that two CA rotations happen within the test:
// the serving certificate is renewed about every 40s, and a CA replaced
// about every 80s, 100s after Muster first starts.
const (
	rotationCertLifetime   = time.Minute
	rotationCACertLifetime = 2 * time.Minute
	// rotationsWanted is how many CA rotations the load must span.
	rotationsWanted = 2
	// rotationLoadLimit bounds the load: two rotations take about three
	// minutes from Muster's start.
	rotationLoadLimit = 6 * time.Minute
)

// TestCertRotation runs Muster with internal certificate management and
// lifetimes of minutes, as a Deployment runs it: it checks that the
// APIService and the webhooks carry the caBundle Muster wrote and work,
// then sends a steady stream of labelled pod creates (each through the
// pod webhook) and PodGroup reads (each through the aggregator) across two
// CA rotations and the serving renewals between them, with a second
// replica racing the first to rotate the shared Secret, and asserts that
// no request fails.
func TestCertRotation(t *testing.T) {
	c := clusterOfItsOwn(t, func(o *cluster.Options) {
		o.Nodes = 1
		o.MusterInternalCerts = true
		o.MusterCertLifetime = rotationCertLifetime
		o.MusterCACertLifetime = rotationCACertLifetime
	})
	ctx := testContext(t, rotationLoadLimit+3*time.Minute)
	kc := kubernetes.NewForConfigOrDie(c.Config)
	mc := versioned.NewForConfigOrDie(c.Config)
	dyn := dynamic.NewForConfigOrDie(c.Config)

	// The harness registered both with no caBundle: Muster wrote these,
	// and the APIService became Available (cluster start waits for it)
	// by them.
	checkPublished(t, ctx, c, kc, dyn)

	ns := c.NewNamespace(t, ctx, fmt.Sprintf("cert-rotation-%d", time.Now().UnixNano()%100000))
	// A gang that never fills (the stream sends far fewer pods than the
	// largest minCount): every pod of the stream stays gated.
	if _, err := mc.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "stream", scheduling.MaxPlacements), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup: %v", err)
	}
	first, err := kc.CoreV1().Pods(ns).Create(ctx, newPod(ns, "first", podOpts{group: "stream"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the first labelled pod: %v", err)
	}
	if !hasGate(first) {
		t.Fatalf("labelled pod created without the %s gate: %v", scheduling.AdmissionGate, first.Spec.SchedulingGates)
	}

	// A second replica shares the Secret and decides rotations too; the
	// aggregator and the webhooks keep pointing at the first.
	if _, stop, err := c.StartMusterReplica(ctx); err != nil {
		t.Fatal(err)
	} else {
		t.Cleanup(stop)
	}

	watcher := &servedCerts{}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		watcher.watch(loadCtx, t, []string{c.MusterURL, c.MusterWebhookURL})
	}()

	began := time.Now()
	var creates, reads int
	var failures []string
	for i := 0; ; i++ {
		if watcher.caRotations() >= rotationsWanted && time.Since(watcher.lastRotation()) > 20*time.Second {
			break
		}
		if time.Since(began) > rotationLoadLimit {
			t.Errorf("saw %d CA rotations on the wire in %s, want %d", watcher.caRotations(), rotationLoadLimit, rotationsWanted)
			break
		}
		p, err := kc.CoreV1().Pods(ns).Create(ctx, newPod(ns, fmt.Sprintf("p-%d", i), podOpts{group: "stream"}), metav1.CreateOptions{})
		creates++
		switch {
		case err != nil:
			failures = append(failures, fmt.Sprintf("%s create p-%d: %v", time.Since(began).Round(time.Millisecond), i, err))
		case !hasGate(p):
			failures = append(failures, fmt.Sprintf("%s create p-%d: created without the gate", time.Since(began).Round(time.Millisecond), i))
		}
		_, err = mc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "stream", metav1.GetOptions{})
		reads++
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s read PodGroup: %v", time.Since(began).Round(time.Millisecond), err))
		}
		// A steady stream, not a flood: about five of each a second.
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	stopLoad()
	wg.Wait()
	took := time.Since(began).Round(time.Second)
	t.Logf("%d labelled pod creates and %d PodGroup reads through the aggregator in %s: %d failed; "+
		"on the wire: %d CA rotations and %d serving certificates; in the Secret: %d CAs",
		creates, reads, took, len(failures), watcher.caRotations(), watcher.servingCerts(), watcher.secretCAs(ctx, kc))
	for _, f := range failures {
		t.Error(f)
	}

	checkPublished(t, ctx, c, kc, dyn)
}

// hasGate reports whether p carries Muster's admission gate.
func hasGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == scheduling.AdmissionGate {
			return true
		}
	}
	return false
}

// checkPublished checks that the APIService and every webhook carry the
// bundle of Muster's Secret, non-empty, once Muster has had time to write
// it; the Secret is read anew each time, as a rotation may change it.
func checkPublished(t *testing.T, ctx context.Context, c *cluster.Cluster, kc kubernetes.Interface, dyn dynamic.Interface) {
	t.Helper()
	apiServices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	var last string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		bundle, err := c.MusterCertBundle(ctx)
		if err != nil || len(bundle) == 0 {
			last = fmt.Sprintf("Muster's Secret holds no CA bundle (%v)", err)
			return false, nil
		}
		obj, err := apiServices.Get(ctx, cluster.MusterAPIServiceName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		encoded, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
		if got, _ := base64.StdEncoding.DecodeString(encoded); !bytes.Equal(got, bundle) {
			last = "APIService caBundle differs from the Secret's bundle"
			return false, nil
		}
		m, err := kc.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		v, err := kc.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, w := range m.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
				last = "mutating webhook " + w.Name + " caBundle differs"
				return false, nil
			}
		}
		for _, w := range v.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
				last = "validating webhook " + w.Name + " caBundle differs"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("caBundles not the Secret's bundle (last: %s): %v", last, err)
	}
}

// servedCerts records the certificates Muster's listeners present, as a
// TLS client sees them, so that a rotation counts only once it is served.
type servedCerts struct {
	mu      sync.Mutex
	issuers []string // in the order first seen
	leaves  map[string]bool
	last    time.Time
}

// watch connects to each listener every 500ms until ctx ends.
func (s *servedCerts) watch(ctx context.Context, t *testing.T, urls []string) {
	for {
		for _, u := range urls {
			parsed, err := url.Parse(u)
			if err != nil {
				t.Errorf("parsing %s: %v", u, err)
				return
			}
			// Only the presented chain is read, never trusted: whether
			// it is trusted is what the creates and reads above test.
			conn, err := tls.Dial("tcp", parsed.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
			if err == nil {
				s.record(conn.ConnectionState().PeerCertificates[0])
				_ = conn.Close()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *servedCerts) record(leaf *x509.Certificate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaves == nil {
		s.leaves = map[string]bool{}
	}
	s.leaves[leaf.SerialNumber.String()] = true
	issuer := leaf.Issuer.CommonName
	if len(s.issuers) == 0 || s.issuers[len(s.issuers)-1] != issuer {
		for _, seen := range s.issuers {
			if seen == issuer {
				return
			}
		}
		s.issuers = append(s.issuers, issuer)
		s.last = time.Now()
	}
}

// caRotations is how many times the served certificate's issuer changed.
func (s *servedCerts) caRotations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(len(s.issuers)-1, 0)
}

func (s *servedCerts) lastRotation() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *servedCerts) servingCerts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.leaves)
}

// secretCAs is how many CAs the Secret's bundle holds now.
func (s *servedCerts) secretCAs(ctx context.Context, kc kubernetes.Interface) int {
	secret, err := kc.CoreV1().Secrets(cluster.MusterNamespace).Get(ctx, cluster.MusterCertSecret, metav1.GetOptions{})
	if err != nil {
		return -1
	}
	return bytes.Count(secret.Data[certs.BundleKey], []byte("BEGIN CERTIFICATE"))
}
