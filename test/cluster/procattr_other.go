//go:build unix && !linux

package cluster

import "syscall"

// sysProcAttr puts each process in its own group so Stop can end it with
// everything it spawned.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
