package e2e

import (
	"bufio"
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// callKey is one series of muster_controller_api_requests_total.
type callKey struct{ client, verb, resource string }

type apiCalls map[callKey]float64

func (a apiCalls) minus(b apiCalls) apiCalls {
	out := apiCalls{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

var callLine = regexp.MustCompile(`^muster_controller_api_requests_total\{client="([^"]*)",resource="([^"]*)",verb="([^"]*)"\} (\S+)$`)

// scrapeAPICalls reads the controller's request counters from Muster's
// /metrics, as the admin user (the path is authorized by the cluster).
func scrapeAPICalls(t *testing.T, ctx context.Context) apiCalls {
	t.Helper()
	body := scrapeMetrics(t, ctx)
	calls := apiCalls{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		m := callLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Fatalf("parsing %q: %v", sc.Text(), err)
		}
		calls[callKey{client: m[1], resource: m[2], verb: m[3]}] = v
	}
	return calls
}

func scrapeMetrics(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = env.MusterURL
	client, err := rest.UnversionedRESTClientFor(withNegotiation(cfg))
	if err != nil {
		t.Fatal(err)
	}
	body, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", env.MusterURL, err)
	}
	return body
}

func withNegotiation(cfg *rest.Config) *rest.Config {
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}
