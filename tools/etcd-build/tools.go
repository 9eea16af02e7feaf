//go:build tools

// The command tools/build-go-binaries builds; the blank import keeps it in go.mod and go.sum.
package etcdbuild

import _ "go.etcd.io/etcd/server/v3"
