// The test OpenTelemetry Collector, as seen from inside a test process. scripts/run-tests.ts (npm test)
// starts one per run when a selected test file imports this module, and passes its description (a JSON
// CollectorInfo) in KUBEDIFF_TEST_OTELCOL. It is shared by the test files running side by side: tell
// your records apart by a cluster name of your own (testClusterName()), and never stop it; a test that
// stops and restarts a Collector starts its own (startCollector() in otelcol.ts).

import type { CollectorInfo } from './otelcol.ts';
import { readRunDescription } from './run-description.ts';
import { uniqueTestName } from './test-names.ts';

let cached: CollectorInfo | undefined;

/** The Collector this test run uses. Throws when the test was not started by `npm test`. */
export function testCollector(): CollectorInfo {
  cached ??= readRunDescription<CollectorInfo>(
    'KUBEDIFF_TEST_OTELCOL',
    'the test OpenTelemetry Collector',
    (info) =>
      typeof info.httpEndpoint !== 'string' || typeof info.outputDir !== 'string'
        ? 'httpEndpoint/outputDir'
        : undefined,
  );
  return cached;
}

/** A cluster name no other test uses: the records of this test are those with it. */
export const testClusterName = uniqueTestName;
