// Names no other test uses, for what the test servers keep across tests (a Kafka topic, an OpenSearch
// index, the cluster name of the Collector's records): `kubediff-test-<label>-<random>`.
import { randomBytes } from 'node:crypto';

export function uniqueTestName(label: string): string {
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
  return `kubediff-test-${slug}-${randomBytes(4).toString('hex')}`;
}
