package chart

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/muster-dev/muster/pkg/cmd/backup"
)

// backupJob is the CronJob muster-etcd-backup's job template, as a Job, so
// the pod helpers read it.
func backupJob(t *testing.T, objs Objects) *unstructured.Unstructured {
	t.Helper()
	cj := mustFind(t, objs, "CronJob", "muster-etcd-backup")
	spec, ok, _ := unstructured.NestedMap(cj.Object, "spec", "jobTemplate", "spec")
	if !ok {
		t.Fatal("CronJob muster-etcd-backup has no jobTemplate.spec")
	}
	return &unstructured.Unstructured{Object: map[string]any{"kind": "Job", "metadata": map[string]any{"name": cj.GetName()}, "spec": spec}}
}

// TestEtcdBackupRendering: by default a CronJob snapshots the bundled etcd
// with the API server's own servers and client certificate, one run at a
// time, onto a volume of its own that helm uninstall keeps, with flags
// `muster-apiserver backup` defines; etcd's NetworkPolicy lets it in.
func TestEtcdBackupRendering(t *testing.T) {
	for _, tc := range []struct {
		values      []string
		wantServers int
	}{
		{values: nil, wantServers: 1},
		{values: []string{"ha-etcd.yaml"}, wantServers: 3},
	} {
		t.Run(strings.Join(append([]string{"default"}, tc.values...), "+"), func(t *testing.T) {
			objs := render(t, "muster-system", tc.values...)
			cj := mustFind(t, objs, "CronJob", "muster-etcd-backup")
			if p, _, _ := unstructured.NestedString(cj.Object, "spec", "concurrencyPolicy"); p != "Forbid" {
				t.Errorf("concurrencyPolicy = %q, want Forbid: two backups would prune each other's snapshots", p)
			}
			job := backupJob(t, objs)
			raw, _, _ := unstructured.NestedStringSlice(container(t, job), "args")
			if len(raw) == 0 || raw[0] != "backup" {
				t.Fatalf("backup container args %v, want the backup command first", raw)
			}
			flags := args(t, job)
			cmd := backup.NewCommand()
			for name := range flags {
				if name != "backup" && cmd.Flags().Lookup(name) == nil {
					t.Errorf("the CronJob passes --%s, which muster-apiserver backup does not define", name)
				}
			}
			apiFlags := args(t, mustFind(t, objs, "Deployment", "muster-apiserver"))
			for _, f := range []string{"etcd-servers", "etcd-cafile", "etcd-certfile", "etcd-keyfile"} {
				if flags[f] != apiFlags[f] {
					t.Errorf("backup --%s=%q, the API server's %q", f, flags[f], apiFlags[f])
				}
			}
			if got := strings.Count(flags["etcd-servers"], "https://"); got != tc.wantServers {
				t.Errorf("--etcd-servers = %q, want %d members", flags["etcd-servers"], tc.wantServers)
			}
			if flags["keep"] != "7" {
				t.Errorf("--keep = %q, want the default 7", flags["keep"])
			}
			if s := volumeSecrets(t, job)["etcd-client"]; s != "muster-etcd-client" {
				t.Errorf("etcd-client volume from Secret %q, want muster-etcd-client", s)
			}
			vols, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "volumes")
			var claim string
			for _, v := range vols {
				if c, ok, _ := unstructured.NestedString(v.(map[string]any), "persistentVolumeClaim", "claimName"); ok {
					claim = c
				}
			}
			if claim != "muster-etcd-backup" {
				t.Errorf("backups go to claim %q, want muster-etcd-backup, not etcd's data volume", claim)
			}
			pvc := mustFind(t, objs, "PersistentVolumeClaim", "muster-etcd-backup")
			if p := pvc.GetAnnotations()["helm.sh/resource-policy"]; p != "keep" {
				t.Errorf("backup volume's helm.sh/resource-policy = %q, want keep: backups outlive the release", p)
			}
			if a, _, _ := unstructured.NestedBool(job.Object, "spec", "template", "spec", "automountServiceAccountToken"); a {
				t.Error("the backup pod mounts a service account token; it never talks to the Kubernetes API")
			}
			np := mustFind(t, objs, "NetworkPolicy", "muster-etcd")
			rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
			var admitted bool
			for _, r := range rules {
				from, _, _ := unstructured.NestedSlice(r.(map[string]any), "from")
				for _, f := range from {
					if n, _, _ := unstructured.NestedString(f.(map[string]any), "podSelector", "matchLabels", "app.kubernetes.io/name"); n == "muster-etcd-backup" {
						admitted = true
					}
				}
			}
			if !admitted {
				t.Error("etcd's NetworkPolicy does not let the backup pods reach it")
			}
		})
	}
}

// TestEtcdBackupOff: with etcd.backup.enabled false nothing of it is
// rendered, and etcd's NetworkPolicy names only the API server.
func TestEtcdBackupOff(t *testing.T) {
	objs := render(t, "muster-system", "no-backup.yaml")
	for _, kind := range []string{"CronJob", "PersistentVolumeClaim"} {
		if o := objs.Find(kind, "muster-etcd-backup"); o != nil {
			t.Errorf("%s muster-etcd-backup rendered with backups off", kind)
		}
	}
	np := mustFind(t, objs, "NetworkPolicy", "muster-etcd")
	out, err := np.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "muster-etcd-backup") {
		t.Error("etcd's NetworkPolicy names the backup pods with backups off")
	}
}
