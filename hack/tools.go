//go:build tools

// Package tools pins the code generators in go.mod.
package tools

import _ "k8s.io/code-generator"
