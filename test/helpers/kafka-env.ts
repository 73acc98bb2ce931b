// The test Kafka broker, as seen from inside a test process. scripts/run-tests.ts (npm test) starts one
// per run when a selected test file imports this module, and passes its description (a JSON KafkaInfo)
// in KUBEDIFF_TEST_KAFKA; KUBEDIFF_TEST_KAFKA_BROKERS makes it use an existing broker (PLAINTEXT only).
//
// The broker is shared by the test files running side by side: give each test topics of its own
// (testTopic()), and never stop it; a test that stops and restarts a broker starts its own (startKafka()
// in kafka.ts).

import type { KafkaInfo, KafkaListener } from './kafka.ts';
import { readRunDescription } from './run-description.ts';
import { uniqueTestName } from './test-names.ts';

let cached: KafkaInfo | undefined;

/** The broker this test run uses. Throws when the test was not started by `npm test`. */
export function testKafka(): KafkaInfo {
  cached ??= readRunDescription<KafkaInfo>('KUBEDIFF_TEST_KAFKA', 'the test Kafka broker', (info) =>
    typeof info.brokers !== 'string' || typeof info.listeners !== 'object' ? 'brokers/listeners' : undefined,
  );
  return cached;
}

/**
 * Why a test that needs a listener other than PLAINTEXT (TLS, SASL) cannot run here, or undefined
 * when it can. Use as `test('…', { skip: needsKafkaListener('SASL_SSL') }, …)`.
 */
export function needsKafkaListener(listener: KafkaListener): string | undefined {
  return testKafka().listeners[listener]
    ? undefined
    : `needs the test broker's ${listener} listener (an existing broker, KUBEDIFF_TEST_KAFKA_BROKERS, has PLAINTEXT only)`;
}

/** A topic name no other test uses. */
export const testTopic = uniqueTestName;
