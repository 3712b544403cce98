package e2e

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/controller/apicalls"
)

// callKey is one series of muster_controller_api_requests_total.
type callKey = apicalls.Key

type apiCalls = apicalls.Counts

// scrapeAPICalls reads the controller's request counters from Muster's
// /metrics, as the admin user (the path is authorized by the cluster). It
// first waits until no namespace is being deleted: the namespaces of
// earlier tests are deleted as they end, and the controller takes its
// finalizer off their pods, which would count against this test.
func scrapeAPICalls(t *testing.T, ctx context.Context) apiCalls {
	t.Helper()
	waitNamespacesDeleted(t, ctx)
	return scrapeAPICallsFrom(t, ctx, env.MusterURL)
}

// waitNamespacesDeleted waits until no namespace is being deleted: those of
// earlier tests are deleted as they end.
func waitNamespacesDeleted(t *testing.T, ctx context.Context) {
	t.Helper()
	waitFor(t, ctx, "earlier tests' namespaces to be deleted", func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, ns := range list.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				return false, nil
			}
		}
		return true, nil
	})
}

// scrapeAPICallsFrom reads the request counters of one muster-apiserver.
func scrapeAPICallsFrom(t *testing.T, ctx context.Context, url string) apiCalls {
	t.Helper()
	calls, err := apicalls.Parse(scrapeMetricsFrom(t, ctx, url))
	if err != nil {
		t.Fatalf("reading %s/metrics: %v", url, err)
	}
	return calls
}

func scrapeMetrics(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	return scrapeMetricsFrom(t, ctx, env.MusterURL)
}

func scrapeMetricsFrom(t *testing.T, ctx context.Context, url string) []byte {
	t.Helper()
	body, err := tryScrapeMetrics(ctx, url)
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", url, err)
	}
	return body
}

// tryScrapeMetrics reads /metrics of one muster-apiserver as the admin user.
func tryScrapeMetrics(ctx context.Context, url string) ([]byte, error) {
	cfg, err := env.MusterConfig(url)
	if err != nil {
		return nil, err
	}
	client, err := rest.UnversionedRESTClientFor(withNegotiation(cfg))
	if err != nil {
		return nil, err
	}
	return client.Get().AbsPath("/metrics").DoRaw(ctx)
}

func withNegotiation(cfg *rest.Config) *rest.Config {
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}

// TestControllerMetrics runs a small gang and checks that /metrics carries
// what operators watch: gate-removal latency, gated pods by phase, pods
// accounted by result, the workqueue's depth and latency, and no sync
// that panicked.
func TestControllerMetrics(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createGroup(t, ctx, ns, "metered", 2)
	createPod(t, ctx, newPod(ns, "w-0", podOpts{group: "metered", runFor: "1s"}))
	waitFor(t, ctx, "the gated-pods gauge to count the waiting pod", func(ctx context.Context) (bool, error) {
		return metricValue(t, ctx, `muster_gated_pods{phase="Pending"}`) >= 1, nil
	})
	createPod(t, ctx, newPod(ns, "w-1", podOpts{group: "metered", runFor: "1s"}))
	waitGroupFinished(t, ctx, ns, "metered")

	for _, series := range []string{
		"muster_pod_scheduling_gate_removal_seconds_count",
		`muster_pods_accounted_total{result="succeeded"}`,
		`workqueue_depth{name="podgroup"}`,
		`workqueue_queue_duration_seconds_count{name="podgroup"}`,
		`muster_pods_ungated_total`,
	} {
		if v := metricValue(t, ctx, series); v < 0 {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	if v := metricValue(t, ctx, "muster_controller_sync_panics_total"); v != 0 {
		t.Errorf("muster_controller_sync_panics_total = %v, want 0: present, and no sync panicked", v)
	}
	if v := metricValue(t, ctx, "muster_pod_scheduling_gate_removal_seconds_count"); v < 1 {
		t.Errorf("gate-removal latency observed %v times, want at least 1", v)
	}
	if v := metricValue(t, ctx, `muster_pods_accounted_total{result="succeeded"}`); v < 2 {
		t.Errorf("pods accounted as succeeded = %v, want at least 2", v)
	}
}

// metricValue returns the value of one series, or -1 when it is absent.
func metricValue(t *testing.T, ctx context.Context, series string) float64 {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(scrapeMetrics(t, ctx)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, series+" ") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, series)), 64)
		if err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		return v
	}
	return -1
}
