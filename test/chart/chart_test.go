package chart

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// repoRoot is the repository root, two levels up from this package.
const repoRoot = "../.."

// helmBinary is $MUSTER_HELM (make chart sets it), else bin/helm. Without
// either the test is skipped, so that `go test ./...` works before
// `make helm`; make chart never skips.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("MUSTER_HELM"); h != "" {
		return h
	}
	h, err := filepath.Abs(filepath.Join(repoRoot, "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h); err != nil {
		t.Skipf("no helm at %s and MUSTER_HELM unset: run make helm", h)
	}
	return h
}

// render renders the chart into namespace with the testdata values files.
func render(t *testing.T, namespace string, values ...string) Objects {
	t.Helper()
	files := make([]string, 0, len(values))
	for _, v := range values {
		files = append(files, filepath.Join("testdata", v))
	}
	out, err := Template(helmBinary(t), filepath.Join(repoRoot, "charts", "muster"), namespace, files)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func mustFind(t *testing.T, objs Objects, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := objs.Find(kind, name)
	if o == nil {
		t.Fatalf("no %s %s in the rendering", kind, name)
	}
	return o
}

// container returns the first container of a workload's pod template.
func container(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s %s has no container", o.GetKind(), o.GetName())
	}
	return cs[0].(map[string]any)
}

// args returns a container's arguments as flag name to value; a flag given
// twice fails the test.
func args(t *testing.T, o *unstructured.Unstructured) map[string]string {
	t.Helper()
	raw, _, _ := unstructured.NestedStringSlice(container(t, o), "args")
	flags := map[string]string{}
	for _, a := range raw {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, dup := flags[name]; dup {
			t.Errorf("%s %s passes --%s twice", o.GetKind(), o.GetName(), name)
		}
		flags[name] = value
	}
	return flags
}

func volumeSecrets(t *testing.T, o *unstructured.Unstructured) map[string]string {
	t.Helper()
	vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
	out := map[string]string{}
	for _, v := range vols {
		vm := v.(map[string]any)
		if s, ok, _ := unstructured.NestedString(vm, "secret", "secretName"); ok {
			out[vm["name"].(string)] = s
		}
	}
	return out
}

func int64Field(t *testing.T, o *unstructured.Unstructured, fields ...string) int64 {
	t.Helper()
	v, ok, err := unstructured.NestedInt64(o.Object, fields...)
	if !ok || err != nil {
		t.Fatalf("%s %s: %v missing (%v)", o.GetKind(), o.GetName(), fields, err)
	}
	return v
}

// caBundles returns each webhook's clientConfig.caBundle of a webhook
// configuration, "" where unset.
func caBundles(o *unstructured.Unstructured) []string {
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	var out []string
	for _, h := range hooks {
		b, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
		out = append(out, b)
	}
	return out
}

// certificate decodes key of a rendered Secret as a PEM certificate.
func certificate(t *testing.T, s *unstructured.Unstructured, key string) *x509.Certificate {
	t.Helper()
	enc, _, _ := unstructured.NestedString(s.Object, "data", key)
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatalf("Secret %s %s: %v", s.GetName(), key, err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		t.Fatalf("Secret %s %s holds no PEM block", s.GetName(), key)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("Secret %s %s: %v", s.GetName(), key, err)
	}
	return c
}

// namespaceSelectorValues returns the NotIn values of a namespaceSelector at
// fields of obj.
func namespaceSelectorValues(t *testing.T, obj map[string]any, fields ...string) []string {
	t.Helper()
	exprs, _, _ := unstructured.NestedSlice(obj, append(fields, "matchExpressions")...)
	if len(exprs) != 1 {
		t.Fatalf("namespaceSelector at %v has %d expressions, want 1", fields, len(exprs))
	}
	vals, _, _ := unstructured.NestedStringSlice(exprs[0].(map[string]any), "values")
	return vals
}
