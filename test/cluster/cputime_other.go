//go:build !linux

package cluster

import "time"

// processCPU is not implemented off Linux.
func processCPU(int) (time.Duration, bool) { return 0, false }
