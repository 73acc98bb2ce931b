// The test OpenSearch node, as seen from inside a test process. scripts/run-tests.ts (npm test) starts one
// per run when a selected test file imports this module, and passes its description (a JSON
// OpenSearchInfo) in KUBEDIFF_TEST_OPENSEARCH; KUBEDIFF_TEST_OPENSEARCH_URL makes it use an existing node
// (without security, or with the credentials in the URL).
//
// The node is shared by the test files running side by side: give each test indices of its own
// (testIndex()), and never stop it; a test that stops and restarts a node starts its own
// (startOpenSearch() in opensearch.ts).

import type { OpenSearchInfo } from './opensearch.ts';
import { readRunDescription } from './run-description.ts';
import { uniqueTestName } from './test-names.ts';

let cached: OpenSearchInfo | undefined;

/** The node this test run uses. Throws when the test was not started by `npm test`. */
export function testOpenSearch(): OpenSearchInfo {
  cached ??= readRunDescription<OpenSearchInfo>(
    'KUBEDIFF_TEST_OPENSEARCH',
    'the test OpenSearch node',
    (info) => (typeof info.url !== 'string' ? 'url' : undefined),
  );
  return cached;
}

/** An index (or data stream) name prefix no other test uses. */
export const testIndex = uniqueTestName;
