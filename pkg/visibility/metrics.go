package visibility

import (
	"sync"
	"time"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// reviewDuration is how long a replica takes to answer a WhatIfReview,
// from its storage's call to the answer: the translation and the cycle on
// the leader, or the round trip to the leader on another replica. The
// time in kube-apiserver's aggregator and in authentication is not in it.
var reviewDuration = k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
	Subsystem: "muster", Name: "whatif_duration_seconds",
	Help:    "Time to answer a WhatIfReview, by where it was answered: here (this replica leads) or forwarded (to the leader).",
	Buckets: k8smetrics.ExponentialBuckets(0.001, 1.5, 20), StabilityLevel: k8smetrics.ALPHA,
}, []string{"answered"})

var registerMetrics sync.Once

func observeReview(answered string, since time.Time) {
	registerMetrics.Do(func() { legacyregistry.MustRegister(reviewDuration) })
	reviewDuration.WithLabelValues(answered).Observe(time.Since(since).Seconds())
}
