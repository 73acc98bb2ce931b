//go:build tools

// Package tools pins actionlint, which test/repo/workflows.test.ts runs on .github/workflows:
// scripts/actionlint-build.ts builds it into .cache/actionlint/bin.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
