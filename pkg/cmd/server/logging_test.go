package server

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// TestLoggingKeepsContextualValues: once the options are applied, the
// logger a caller puts in the context, with the values it adds (as a sync
// adds its PodGroup), is the one that writes. component-base's logs.InitLogs
// turns contextual logging off, and then klog.FromContext ignores the
// context and every line lacks the PodGroup.
func TestLoggingKeepsContextualValues(t *testing.T) {
	t.Cleanup(func() { klog.EnableContextualLogging(true) })
	klog.EnableContextualLogging(false) // as logs.InitLogs leaves it

	if err := NewOptions().applyLogging(); err != nil {
		t.Fatalf("applying the logging options: %v", err)
	}
	var lines []string
	sink := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	ctx := klog.NewContext(context.Background(), sink.WithValues("podgroup", "ns/g"))
	klog.FromContext(ctx).Info("Released pods", "count", 2)
	if len(lines) != 1 || !strings.Contains(lines[0], `"podgroup"="ns/g"`) {
		t.Errorf("lines written through the context's logger: %q; want one with its podgroup", lines)
	}
}
