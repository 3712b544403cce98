package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/controller/apicalls"
)

// apiCalls are the controller's request counters by series.
type apiCalls = apicalls.Counts

// writes sums the counters of the verbs that change an object.
func writes(a apiCalls) float64 {
	sum := 0.0
	for k, v := range a {
		switch k.Verb {
		case "create", "update", "patch", "delete", "deletecollection", "apply":
			sum += v
		}
	}
	return sum
}

// scrapeCalls reads the controller's request counters from Muster's
// /metrics, as the cluster admin.
func (d *driver) scrapeCalls(ctx context.Context) (apiCalls, error) {
	body, err := d.scrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return apicalls.Parse(body)
}

// scrapeMetrics reads the leader's /metrics.
func (d *driver) scrapeMetrics(ctx context.Context) ([]byte, error) {
	cfg, err := d.c.MusterConfig(d.c.MusterURL)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.c.MusterURL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s: %v", resp.Status, err)
	}
	return body, nil
}
