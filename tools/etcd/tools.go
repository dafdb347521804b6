//go:build tools

// etcdctl, which tools/build.sh builds beside etcd (its module's root package is the command), required here
// so that go.sum holds what it imports.
package tools

import _ "go.etcd.io/etcd/etcdctl/v3"
