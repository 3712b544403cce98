package cluster

import (
	"reflect"
	"testing"
)

// TestEscapeNamespaceField: only the field name namespace in CEL rules and
// message expressions is escaped, wherever the rules sit in the schema.
func TestEscapeNamespaceField(t *testing.T) {
	rules := func(rs ...map[string]any) map[string]any {
		list := make([]any, len(rs))
		for i, r := range rs {
			list[i] = r
		}
		return map[string]any{"x-kubernetes-validations": list}
	}
	tests := []struct {
		name        string
		in, want    map[string]any
		wantChanged int
	}{
		{"field namespace in a rule is escaped",
			rules(map[string]any{"rule": "!has(t.metadata.namespace) || size(t.metadata.namespace) == 0"}),
			rules(map[string]any{"rule": "!has(t.metadata.__namespace__) || size(t.metadata.__namespace__) == 0"}), 1},
		{"message expression is escaped too",
			rules(map[string]any{"rule": "true", "messageExpression": "self.namespace + ' is set'"}),
			rules(map[string]any{"rule": "true", "messageExpression": "self.__namespace__ + ' is set'"}), 1},
		{"a longer field name is kept",
			rules(map[string]any{"rule": "size(self.namespaces) > 0 && has(self.namespace_x)"}),
			rules(map[string]any{"rule": "size(self.namespaces) > 0 && has(self.namespace_x)"}), 0},
		{"rules nested under properties and items are found",
			map[string]any{"properties": map[string]any{"spec": map[string]any{"items": rules(map[string]any{"rule": "has(self.namespace)"})}}},
			map[string]any{"properties": map[string]any{"spec": map[string]any{"items": rules(map[string]any{"rule": "has(self.__namespace__)"})}}}, 1},
		{"text outside validation rules is kept",
			map[string]any{"description": "see .namespace", "x-kubernetes-validations": "not a list"},
			map[string]any{"description": "see .namespace", "x-kubernetes-validations": "not a list"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := escapeNamespaceField(tc.in); got != tc.wantChanged {
				t.Errorf("changed %d expressions, want %d", got, tc.wantChanged)
			}
			if !reflect.DeepEqual(tc.in, tc.want) {
				t.Errorf("got %v, want %v", tc.in, tc.want)
			}
		})
	}
}
