package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// processMemory reads VmRSS and VmHWM of pid from /proc/<pid>/status; the
// kernel gives both in KiB.
func processMemory(pid int) (rss, hwm int64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	found := 0
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		key, value, cut := bytes.Cut(s.Bytes(), []byte(":"))
		if !cut {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		fields := bytes.Fields(value)
		if len(fields) == 0 {
			return 0, 0, false
		}
		kib, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		*dst = kib << 10
		found++
	}
	return rss, hwm, found == 2
}
