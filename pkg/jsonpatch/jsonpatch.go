// Package jsonpatch builds the RFC 6902 patches that the controller and the
// webhook send. Each builder guards what it changes with test operations, so
// that a patch fails, rather than touch the wrong item, when the object
// changed since it was read.
package jsonpatch

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Op is one RFC 6902 operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Test checks that the value at path is value.
func Test(path string, value any) Op { return Op{Op: "test", Path: path, Value: value} }

// Add adds value at path.
func Add(path string, value any) Op { return Op{Op: "add", Path: path, Value: value} }

// Remove removes the value at path.
func Remove(path string) Op { return Op{Op: "remove", Path: path} }

// RemoveItem removes the item at index of the string-like list at listPath
// from the object with uid. It tests the object's UID and the item's value,
// at itemField under the item (empty for the item itself), so that it never
// removes another item, or touches a new object of the same name.
func RemoveItem(uid types.UID, listPath string, index int, itemField string, value any) []Op {
	path := fmt.Sprintf("%s/%d", listPath, index)
	return []Op{
		Test("/metadata/uid", uid),
		Test(path+itemField, value),
		Remove(path),
	}
}

// RemoveFinalizer removes finalizer from an object with uid whose finalizers
// are finalizers, or returns false when it does not carry it.
func RemoveFinalizer(uid types.UID, finalizers []string, finalizer string) ([]Op, bool) {
	for i, f := range finalizers {
		if f == finalizer {
			return RemoveItem(uid, "/metadata/finalizers", i, "", finalizer), true
		}
	}
	return nil, false
}

// Append adds item at the end of the list at path, which holds n items. An
// empty list may be absent or null in the JSON the API server patches, and
// "/-" fails on both, so it is replaced by a whole one-item list instead.
func Append[T any](path string, n int, item T) Op {
	if n == 0 {
		return Add(path, []T{item})
	}
	return Add(path+"/-", item)
}

// SetKey sets key in the map at path; an empty map may be absent from the
// JSON, so the whole map is added.
func SetKey(path string, m map[string]string, key, value string) Op {
	if len(m) == 0 {
		return Add(path, map[string]string{key: value})
	}
	return Add(path+"/"+EscapePointer(key), value)
}

// pointerEscaper escapes a JSON Pointer reference token (RFC 6901), so that a
// label key such as "scheduling.muster.dev/managed" is one token, not two. A
// Replacer works in one pass, so the '~' of a "~1" it writes is not escaped again.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// EscapePointer escapes token for use as one reference token of a path.
func EscapePointer(token string) string { return pointerEscaper.Replace(token) }

// Marshal encodes ops. Ops hold only strings, lists and maps, so encoding
// cannot fail; a failure is a programming error.
func Marshal(ops []Op) []byte {
	b, err := json.Marshal(ops)
	if err != nil {
		panic(fmt.Sprintf("encoding a JSON patch: %v", err))
	}
	return b
}
