package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"

	"k8s.io/client-go/rest"
)

// callKey is one series of muster_controller_api_requests_total.
type callKey struct{ client, verb, resource string }

// apiCalls are the controller's request counters by series.
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

// writes sums the counters of the verbs that change an object.
func (a apiCalls) writes() float64 {
	sum := 0.0
	for k, v := range a {
		switch k.verb {
		case "create", "update", "patch", "delete", "deletecollection", "apply":
			sum += v
		}
	}
	return sum
}

var callLine = regexp.MustCompile(`^muster_controller_api_requests_total\{client="([^"]*)",resource="([^"]*)",verb="([^"]*)"\} (\S+)$`)

// scrapeCalls reads the controller's request counters from Muster's
// /metrics, as the cluster admin.
func (d *driver) scrapeCalls(ctx context.Context) (apiCalls, error) {
	cfg := rest.CopyConfig(d.c.Config)
	cfg.Host = d.c.MusterURL
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
	return parseCalls(body)
}

// parseCalls reads the request counters from a Prometheus text exposition.
func parseCalls(body []byte) (apiCalls, error) {
	calls := apiCalls{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := callLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", sc.Text(), err)
		}
		calls[callKey{client: m[1], resource: m[2], verb: m[3]}] = v
	}
	return calls, sc.Err()
}
