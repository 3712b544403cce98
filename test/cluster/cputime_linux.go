package cluster

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times; it is 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// processCPU reads utime and stime of pid from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// fields 14 and 15 (utime, stime) are the 12th and 13th after it.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, false
	}
	fields := bytes.Fields(data[end+1:])
	if len(fields) < 13 {
		return 0, false
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, true
}
