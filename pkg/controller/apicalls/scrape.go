package apicalls

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
)

// Key is one series of Requests.
type Key struct{ Client, Verb, Resource string }

// Counts are the values of Requests by series, as read from /metrics.
type Counts map[Key]float64

// Minus returns the series that changed from b to c, by how much.
func (c Counts) Minus(b Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// seriesLine matches one sample of Requests in the text exposition format.
var seriesLine = regexp.MustCompile(`^muster_controller_api_requests_total\{client="([^"]*)",resource="([^"]*)",verb="([^"]*)"\} (\S+)$`)

// Parse reads the samples of Requests from a /metrics body, for tests and
// benchmarks that count what the controller spent.
func Parse(body []byte) (Counts, error) {
	counts := Counts{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := seriesLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", sc.Text(), err)
		}
		counts[Key{Client: m[1], Resource: m[2], Verb: m[3]}] = v
	}
	return counts, sc.Err()
}
