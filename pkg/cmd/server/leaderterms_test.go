package server

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestLeaderTermsOneAtATime checks that a term won while the last one's
// controller is still stopping starts only once that controller returned,
// and that a term whose leadership ends while it waits never starts.
func TestLeaderTermsOneAtATime(t *testing.T) {
	terms := newLeaderTerms()
	firstCtx, loseFirst := context.WithCancel(t.Context())
	firstRunning, releaseFirst := make(chan struct{}), make(chan struct{})
	var firstReturned atomic.Bool
	go terms.run(firstCtx, func(context.Context) {
		close(firstRunning)
		<-releaseFirst // still stopping, after its context ended
		firstReturned.Store(true)
	})
	<-firstRunning
	loseFirst()

	// A term that ends while it waits never starts.
	abandoned, abandon := context.WithCancel(t.Context())
	abandon()
	terms.run(abandoned, func(context.Context) { t.Error("a term whose context ended while it waited started") })

	secondDone := make(chan struct{})
	go func() {
		defer close(secondDone)
		terms.run(t.Context(), func(context.Context) {
			if !firstReturned.Load() {
				t.Error("the second term started while the first term's controller was still running")
			}
		})
	}()
	close(releaseFirst)
	<-secondDone
	if !firstReturned.Load() {
		t.Error("the second term returned before the first")
	}
}
