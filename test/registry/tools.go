//go:build tools

// Package tools pins the OCI registry (CNCF Distribution) that the release tests push the image and
// the chart to, on loopback: scripts/registry-build.ts builds it into .cache/registry/bin.
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
