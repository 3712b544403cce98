package jsonpatch

import "testing"

func TestEscapePointer(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"scheduling.muster.dev/managed", "scheduling.muster.dev~1managed"},
		{"a~b/c", "a~0b~1c"},
		{"~1", "~01"},
	}
	for _, tt := range tests {
		if got := EscapePointer(tt.in); got != tt.want {
			t.Errorf("EscapePointer(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
