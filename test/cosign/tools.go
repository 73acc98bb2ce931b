//go:build tools

// Package tools pins cosign, with which the release tests sign and verify the image and the chart in
// the loopback registry (a key pair made by the test, no transparency log): scripts/cosign-build.ts
// builds it into .cache/cosign/bin.
package tools

import _ "github.com/sigstore/cosign/v2/cmd/cosign"
