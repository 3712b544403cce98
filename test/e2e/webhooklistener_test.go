package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/test/abuse/attack"
	"github.com/muster-dev/muster/test/chart"
	"github.com/muster-dev/muster/test/cluster"
)

// slowClients is how many slow connections the attack opens: the number
// that, on the API's port, made every labelled create fail (issue 21).
const slowClients = 800

// webhookAddr is host:port of the mutating webhook as kube-apiserver calls
// it, read from its configuration, so that the attack aims where the calls
// go whichever port that is.
func webhookAddr(t *testing.T, ctx context.Context, kube kubernetes.Interface) string {
	t.Helper()
	cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc := cfg.Webhooks[0].ClientConfig.Service; svc != nil {
		// The chart's webhooks name the Service, which the harness makes an
		// ExternalName for loopback: kube-apiserver dials
		// externalName:port.
		s, err := kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Spec.ExternalName == "" || svc.Port == nil {
			t.Fatalf("the webhook's Service %s/%s is no ExternalName with a port: %+v", svc.Namespace, svc.Name, s.Spec)
		}
		return net.JoinHostPort(s.Spec.ExternalName, strconv.Itoa(int(*svc.Port)))
	}
	u, err := url.Parse(*cfg.Webhooks[0].ClientConfig.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// createLabelledPods creates labelled pods through kube-apiserver, one
// after another, at least n and for at least d, and returns how many, the
// errors and the slowest create.
func createLabelledPods(ctx context.Context, kube kubernetes.Interface, ns, prefix string, n int, d time.Duration) (int, []error, time.Duration) {
	var errs []error
	var slowest time.Duration
	begin := time.Now()
	i := 0
	for ; i < n || time.Since(begin) < d; i++ {
		if i >= n {
			select {
			case <-ctx.Done():
				return i, append(errs, ctx.Err()), slowest
			case <-time.After(250 * time.Millisecond):
			}
		}
		start := time.Now()
		p := newPod(ns, fmt.Sprintf("%s-%d", prefix, i), podOpts{group: prefix})
		created, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if took := time.Since(start); took > slowest {
			slowest = took
		}
		switch {
		case err != nil:
			errs = append(errs, err)
		case !scheduling.HasGate(created):
			errs = append(errs, fmt.Errorf("pod %s was created without the admission gate", p.Name))
		}
	}
	return i, errs, slowest
}

// TestSlowWebhookClientsDoNotFailPodCreates opens 800 TLS connections to the
// address kube-apiserver calls the webhook at, each sending a review body a
// byte at a time, from a pod's address (not kube-apiserver's), as an
// anonymous caller and as one holding the client certificate
// kube-apiserver presents, and creates labelled pods through
// kube-apiserver meanwhile: every create succeeds, gated.
func TestSlowWebhookClientsDoNotFailPodCreates(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	ns := namespace(t, ctx)
	addr := webhookAddr(t, ctx, kube)
	trusted, err := env.WebhookClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tls  *tls.Config
	}{
		{"anonymous", nil},
		{"with kube-apiserver's client certificate", trusted},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			stop := attack.SlowWebhookClientsFrom(ctx, attack.Source, addr, slowClients, tt.tls)
			opened := time.Since(start)
			// For longer than the listener's read deadline and the
			// webhook's timeout, so that slow clients are cut off and
			// come back while pods are created.
			creates, errs, slowest := createLabelledPods(ctx, kube, ns, fmt.Sprintf("slow%d", i), 30, 15*time.Second)
			stats := stop()
			t.Logf("%d slow clients (%s) opened in %v: %d connections, %d cut off by the server, %d failed dials; "+
				"%d labelled creates over %v meanwhile: %d failed, slowest %v",
				slowClients, tt.name, opened.Round(time.Millisecond), stats.Connections, stats.Cut, stats.DialErrors,
				creates, time.Since(start).Round(time.Second), len(errs), slowest.Round(time.Millisecond))
			for _, err := range errs {
				t.Errorf("labelled pod create under attack: %v", err)
			}
		})
	}
}

// TestWebhookStaysReadyWhileMusterEtcdIsDown kills Muster's own etcd, on a
// cluster of its own, and while it is down checks that the readiness probe
// of the chart's muster-webhook Deployment keeps passing (so its pods stay
// in the webhook Service's endpoints) and that labelled pods are created,
// gated, through kube-apiserver. The API's /readyz fails meanwhile: the
// outage is real.
func TestWebhookStaysReadyWhileMusterEtcdIsDown(t *testing.T) {
	c := clusterOfItsOwn(t, func(o *cluster.Options) { o.MusterEtcd = true })
	kube := kubernetes.NewForConfigOrDie(c.Config)
	ctx := testContext(t, 4*time.Minute)
	ns := "etcd-outage"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForDefaultServiceAccount(ctx, ns); err != nil {
		t.Fatal(err)
	}
	probe := readinessProbeURL(t, c)
	apiReadyz := c.MusterURL + "/readyz"
	tlsConfig, err := c.WebhookClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig.Certificates = nil // the kubelet's probe presents none
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
	get := func(u string) int {
		resp, err := client.Get(u)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(probe); code != http.StatusOK {
		t.Fatalf("readiness probe %s answered %d before the outage", probe, code)
	}

	if err := c.Kill(cluster.MusterEtcdComponent); err != nil {
		t.Fatal(err)
	}
	etcdUp := false
	t.Cleanup(func() {
		if !etcdUp {
			_, _ = c.StartAgain(context.Background(), cluster.MusterEtcdComponent)
		}
	})
	waitFor(t, ctx, "the API's /readyz to fail with etcd down", func(context.Context) (bool, error) {
		return get(apiReadyz) != http.StatusOK, nil
	})
	_, errs, slowest := createLabelledPods(ctx, kube, ns, "outage", 10, 0)
	probeCode := get(probe)
	t.Logf("with Muster's etcd down: readiness probe %s answered %d, API /readyz %d; 10 labelled creates: %d failed, slowest %v",
		probe, probeCode, get(apiReadyz), len(errs), slowest.Round(time.Millisecond))
	if probeCode != http.StatusOK {
		t.Errorf("the Deployment's readiness probe %s answered %d with etcd down, want 200: the replica would leave the webhook Service", probe, probeCode)
	}
	for _, err := range errs {
		t.Errorf("labelled pod create with Muster's etcd down: %v", err)
	}

	if _, err := c.StartAgain(ctx, cluster.MusterEtcdComponent); err != nil {
		t.Fatal(err)
	}
	etcdUp = true
	waitFor(t, ctx, "the API's /readyz to pass again", func(context.Context) (bool, error) {
		return get(apiReadyz) == http.StatusOK, nil
	})
}

// readinessProbeURL is the URL, on the local cluster's Muster, of the
// readinessProbe of the chart's muster-webhook Deployment
// (dist/muster.yaml): its named port "webhook" is the webhook listener's.
func readinessProbeURL(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chart.ReadRendering(root, filepath.Join("dist", "muster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := objs.Find("Deployment", cluster.WebhookDeployment)
	if u == nil {
		t.Fatalf("dist/muster.yaml has no Deployment %s", cluster.WebhookDeployment)
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		t.Fatal(err)
	}
	probe := d.Spec.Template.Spec.Containers[0].ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		t.Fatal("the Deployment has no HTTP readiness probe")
	}
	bases := map[string]string{"webhook": c.MusterWebhookURL}
	base, ok := bases[probe.HTTPGet.Port.String()]
	if !ok {
		names := make([]string, 0, len(bases))
		for n := range bases {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("the readiness probe's port %q is none of %v", probe.HTTPGet.Port.String(), names)
	}
	return base + probe.HTTPGet.Path
}

// TestWebhookServesOnlyKubeAPIServer checks the default install where
// kube-apiserver presents a client certificate: the harness creates the
// Secret muster-webhook-client-ca before installing, so the chart's
// webhook.clientAuth.mode Auto turns client certificates on, and a caller
// without kube-apiserver's certificate is refused before its review is
// read.
func TestWebhookServesOnlyKubeAPIServer(t *testing.T) {
	ctx := testContext(t, time.Minute)
	trusted, err := env.WebhookClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	anonymous := trusted.Clone()
	anonymous.Certificates = nil
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x"}}`)
	for _, tt := range []struct {
		name string
		tls  *tls.Config
		want int
	}{
		{"anonymous", anonymous, http.StatusUnauthorized},
		{"with kube-apiserver's client certificate", trusted, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tt.tls}}
			defer client.CloseIdleConnections()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.MusterWebhookURL+manifests.MutatePath, bytes.NewReader(review))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("POST %s: %v", manifests.MutatePath, err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("POST %s %s: HTTP %d, want %d", manifests.MutatePath, tt.name, resp.StatusCode, tt.want)
			}
		})
	}
}
