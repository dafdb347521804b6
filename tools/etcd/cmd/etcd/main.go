// etcd's main, as go.etcd.io/etcd/v3's main.go at v3.5.15 has it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
