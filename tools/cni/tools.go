//go:build tools

// What tools/build.sh builds, required here so that go.sum holds it: flanneld's main package (flannel's
// main.go, which the build copies without the tencentvpc backend: that backend's Tencent Cloud SDK module is
// not served by the Go module proxy, and the lab runs the vxlan backend) imports the packages below;
// install-conf, as flannel's image has it; and the CNI plugins the flannel CNI plugin delegates to (the ones
// the kubernetes-cni package puts in /opt/cni/bin).
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/pkg/flagutil"
	_ "github.com/flannel-io/flannel/cmd/install_conf"
	_ "github.com/flannel-io/flannel/pkg/backend"
	_ "github.com/flannel-io/flannel/pkg/backend/alloc"
	_ "github.com/flannel-io/flannel/pkg/backend/extension"
	_ "github.com/flannel-io/flannel/pkg/backend/hostgw"
	_ "github.com/flannel-io/flannel/pkg/backend/ipip"
	_ "github.com/flannel-io/flannel/pkg/backend/ipsec"
	_ "github.com/flannel-io/flannel/pkg/backend/udp"
	_ "github.com/flannel-io/flannel/pkg/backend/vxlan"
	_ "github.com/flannel-io/flannel/pkg/backend/wireguard"
	_ "github.com/flannel-io/flannel/pkg/ip"
	_ "github.com/flannel-io/flannel/pkg/ipmatch"
	_ "github.com/flannel-io/flannel/pkg/subnet"
	_ "github.com/flannel-io/flannel/pkg/subnet/etcd"
	_ "github.com/flannel-io/flannel/pkg/subnet/kube"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr/iptables"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr/nftables"
	_ "github.com/flannel-io/flannel/pkg/version"
	_ "github.com/joho/godotenv"
	_ "k8s.io/klog/v2"
)
