package cluster

import "syscall"

// sysProcAttr puts each process in its own group and asks the kernel to kill
// it if the harness dies without running Stop (a panicking or killed test).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
