// Package chart renders charts/muster with bin/helm for tests: the chart's
// rendering test here, and the readers of its default rendering elsewhere.
package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Objects are a rendering's objects, in order.
type Objects []*unstructured.Unstructured

// Find returns the object of kind and name, or nil.
func (objs Objects) Find(kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// OfKind returns the objects of kind.
func (objs Objects) OfKind(kind string) Objects {
	var out Objects
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Decode parses a multi-document YAML stream into objects, skipping empty
// documents.
func Decode(data []byte) (Objects, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs Objects
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding document %d: %w", len(objs)+1, err)
		}
		// apimachinery's json keeps whole numbers int64, as the API server
		// decodes them, so that unstructured's NestedInt64 reads them.
		var m map[string]any
		if err := utiljson.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("decoding document %d: %w", len(objs)+1, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// Template runs `helm template` on the chart in chartDir as release "muster"
// in namespace, with the values files and extra arguments given, and
// returns its output; on failure, the error holds helm's message.
func Template(helm, chartDir, namespace string, valuesFiles []string, extra ...string) ([]byte, error) {
	args := []string{"template", "muster", chartDir, "--namespace", namespace}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	args = append(args, extra...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %v: %w: %s", args, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// ReadRendering decodes a rendering committed to the repository, such as
// dist/muster.yaml, from the repository root root.
func ReadRendering(root, path string) (Objects, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return Decode(data)
}
