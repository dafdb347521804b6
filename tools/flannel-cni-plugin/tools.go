//go:build tools

// The flannel CNI plugin, required here so that go.sum holds what it imports.
package tools

import _ "github.com/containernetworking/plugins/plugins/meta/flannel"
