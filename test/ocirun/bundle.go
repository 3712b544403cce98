package ocirun

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Mount is a host directory mounted into the container, as the kubelet
// mounts a pod's volume.
type Mount struct {
	Source, Destination string
	ReadOnly            bool
}

// Config is what the caller sets of a container; the rest comes from the
// image: its entrypoint, user, working directory and environment.
type Config struct {
	// Args follow the image's entrypoint, as a container's args do.
	Args []string
	// Env (NAME=value) is added to the image's, and wins over it for a
	// name both set, as a container's env does.
	Env []string
	// Mounts are the volumes.
	Mounts []Mount
	// ReadOnlyRoot mounts the image's filesystem read-only
	// (readOnlyRootFilesystem).
	ReadOnlyRoot bool
	// NoCapabilities drops every capability (capabilities.drop: [ALL]).
	NoCapabilities bool
	// SupplementalGroups are added to the image's group (a pod's fsGroup).
	SupplementalGroups []uint32
}

// WriteBundle unpacks img into bundle/rootfs and writes bundle/config.json:
// the runtime's own default spec (`<runtime> spec`), given the image's
// entrypoint, user, working directory and environment, the host's network
// namespace (the container reaches the cluster on 127.0.0.1, and is
// reached there), and cfg.
func WriteBundle(ociRuntime, bundle string, img v1.Image, cfg Config) error {
	if err := Unpack(img, filepath.Join(bundle, "rootfs")); err != nil {
		return fmt.Errorf("unpacking the image: %w", err)
	}
	if out, err := exec.Command(ociRuntime, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		return fmt.Errorf("%s spec: %w: %s", ociRuntime, err, out)
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s specs.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading the image's config: %w", err)
	}
	uid, gid, err := ParseUser(cf.Config.User)
	if err != nil {
		return err
	}
	s.Process.Terminal = false
	s.Process.Args = append(append([]string(nil), cf.Config.Entrypoint...), cfg.Args...)
	s.Process.Env = mergeEnv(cf.Config.Env, cfg.Env)
	s.Process.Cwd = cf.Config.WorkingDir
	s.Process.User = specs.User{UID: uid, GID: gid, AdditionalGids: cfg.SupplementalGroups}
	s.Process.NoNewPrivileges = true
	if cfg.NoCapabilities {
		s.Process.Capabilities = &specs.LinuxCapabilities{}
	}
	s.Root = &specs.Root{Path: "rootfs", Readonly: cfg.ReadOnlyRoot}
	s.Hostname = ""
	var namespaces []specs.LinuxNamespace
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != specs.NetworkNamespace && ns.Type != specs.UTSNamespace {
			namespaces = append(namespaces, ns)
		}
	}
	s.Linux.Namespaces = namespaces
	for _, m := range cfg.Mounts {
		opts := []string{"rbind", "rw"}
		if m.ReadOnly {
			opts = []string{"rbind", "ro"}
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: opts})
	}
	if data, err = json.MarshalIndent(&s, "", "  "); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// mergeEnv is base with extra added, a name in both taking extra's value.
func mergeEnv(base, extra []string) []string {
	index := map[string]int{}
	var env []string
	for _, kv := range append(append([]string(nil), base...), extra...) {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := index[name]; ok {
			env[i] = kv
			continue
		}
		index[name] = len(env)
		env = append(env, kv)
	}
	return env
}

// ParseUser reads an image's numeric "uid:gid" (Muster's image names its
// user by number, so that the kubelet can check runAsNonRoot).
func ParseUser(user string) (uint32, uint32, error) {
	u, g, ok := strings.Cut(user, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("image user %q is not a numeric uid:gid", user)
	}
	return uint32(uid), uint32(gid), nil
}
