// The flannel CNI plugin (the `flannel` binary flannel's DaemonSet copies into /opt/cni/bin). Its own module,
// github.com/flannel-io/cni-plugin, is not served by the Go module proxy; its code came from
// containernetworking/plugins, whose v0.9.1 is the last release with plugins/meta/flannel.
module k8s-vnf.local/tools/flannel-cni-plugin

go 1.21

require github.com/containernetworking/plugins v0.9.1

require (
	github.com/Microsoft/go-winio v0.4.11 // indirect
	github.com/Microsoft/hcsshim v0.8.6 // indirect
	github.com/buger/jsonparser v0.0.0-20180808090653-f4dd9f5a6b44 // indirect
	github.com/containernetworking/cni v0.8.1 // indirect
	github.com/sirupsen/logrus v1.0.6 // indirect
	golang.org/x/crypto v0.0.0-20200622213623-75b288015ac9 // indirect
	golang.org/x/sys v0.0.0-20201117170446-d9b008d0a637 // indirect
)
