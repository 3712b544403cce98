package cluster

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestProcessCPUReadsOwnProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, ok := processCPU(os.Getpid())
	if !ok {
		t.Fatal("processCPU of this process: not read")
	}
	// Burn some CPU until the kernel's tick-granular count moves.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x += i
		}
		if after, _ := processCPU(os.Getpid()); after > before {
			return
		}
	}
	t.Fatalf("CPU time did not grow from %s after 10s of work (%d)", before, x)
}
