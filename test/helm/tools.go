//go:build tools

// Package tools pins the Helm used to lint and render deploy/helm/kubediff in the tests:
//
//	cd test/helm && go build -o ../../.cache/helm/bin/helm helm.sh/helm/v3/cmd/helm
package tools

import _ "helm.sh/helm/v3/cmd/helm"
