package ocirun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultRuntime is the OCI runtime hack/install-oci-runtime.sh installs:
// runc, which runs on this project's machines where Debian 12's crun does
// not (docs/image.md).
const DefaultRuntime = "runc"

// RunArgs are the runtime's arguments that create and start container id
// from bundle in the foreground: the runtime's process lives as long as
// the container, forwards signals to it, and writes its output to the
// runtime's own stdout and stderr.
func RunArgs(bundle, id string) []string {
	return []string{"run", "--bundle", bundle, id}
}

// Remove kills container id with SIGKILL and deletes it; a container that
// does not exist (never created, or already deleted) is no error.
func Remove(ociRuntime, id string) error {
	_ = exec.Command(ociRuntime, "kill", id, "KILL").Run()
	out, err := exec.Command(ociRuntime, "delete", "--force", id).CombinedOutput()
	if err != nil && !bytes.Contains(out, []byte("does not exist")) {
		return fmt.Errorf("%s delete %s: %w: %s", ociRuntime, id, err, out)
	}
	return nil
}

// Pid is the host's process id of container id's first process.
func Pid(ociRuntime, id string) (int, error) {
	out, err := exec.Command(ociRuntime, "state", id).Output()
	if err != nil {
		return 0, fmt.Errorf("%s state %s: %w", ociRuntime, id, err)
	}
	var st specs.State
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, fmt.Errorf("reading %s state %s: %w", ociRuntime, id, err)
	}
	if st.Status != specs.StateRunning || st.Pid == 0 {
		return 0, fmt.Errorf("container %s is %s, not running", id, st.Status)
	}
	return st.Pid, nil
}

// Identity is the real, effective, saved and filesystem user and group
// ids of a process, as /proc/<pid>/status lists them.
type Identity struct {
	UIDs, GIDs []uint32
}

// ProcessIdentity reads the user and group ids of process pid.
func ProcessIdentity(pid int) (Identity, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Identity{}, err
	}
	defer f.Close()
	var id Identity
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, value, _ := strings.Cut(s.Text(), ":")
		var into *[]uint32
		switch name {
		case "Uid":
			into = &id.UIDs
		case "Gid":
			into = &id.GIDs
		default:
			continue
		}
		for _, field := range strings.Fields(value) {
			n, err := strconv.ParseUint(field, 10, 32)
			if err != nil {
				return Identity{}, fmt.Errorf("/proc/%d/status %s: %w", pid, name, err)
			}
			*into = append(*into, uint32(n))
		}
	}
	return id, s.Err()
}

// MountOptions are the per-mount options (ro or rw, ...) of the mount at
// path as process pid sees it, the last one mounted there.
func MountOptions(pid int, path string) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return nil, err
	}
	var opts []string
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		// id parent major:minor root mountpoint options ...
		f := strings.Fields(line)
		if len(f) < 6 || f[4] != path {
			continue
		}
		opts, found = strings.Split(f[5], ","), true
	}
	if !found {
		return nil, fmt.Errorf("process %d has nothing mounted at %s", pid, path)
	}
	return opts, nil
}
