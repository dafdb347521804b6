//go:build tools

// The command tools/build.sh builds (the module's root package is CoreDNS's main), required here so that
// go.sum holds what it imports.
package tools

import _ "github.com/coredns/coredns"
