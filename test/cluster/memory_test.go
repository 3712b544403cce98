package cluster

import (
	"os"
	"runtime"
	"testing"
)

// TestProcessMemory reads this test's own process: both figures are set,
// and the peak is never below the current size.
func TestProcessMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	rss, hwm, ok := processMemory(os.Getpid())
	if !ok {
		t.Fatal("no VmRSS/VmHWM in /proc/self/status")
	}
	if rss <= 0 || hwm < rss {
		t.Fatalf("rss %d, peak %d: want 0 < rss <= peak", rss, hwm)
	}
	if _, _, ok := processMemory(-1); ok {
		t.Fatal("a process that does not exist has no memory figures")
	}
}
