//go:build tools

// Package tools pins kwok, whose controller plays the kubelets of fake nodes for the tests whose pods
// must go through real states (test/helpers/pod-plane.ts):
//
//	cd test/kwok && go build -o ../../.cache/kwok/bin/kwok sigs.k8s.io/kwok/cmd/kwok
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
