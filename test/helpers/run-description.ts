// How `npm test` (scripts/run-tests.ts) describes the servers it started to the test processes: a JSON
// file per server, named by an environment variable (KUBEDIFF_TEST_CLUSTER, KUBEDIFF_TEST_POSTGRES,
// KUBEDIFF_TEST_KAFKA). Read here, once per test process, with one clear sentence when it is missing.
import { readFileSync } from 'node:fs';

/**
 * The description in the file $variable names. `what` names the server in messages ("the test
 * cluster"); `missing` says which required field the parsed value lacks, if any.
 */
export function readRunDescription<T>(
  variable: string,
  what: string,
  missing: (value: Partial<T>) => string | undefined,
): T {
  const file = process.env[variable];
  if (!file) {
    throw new Error(
      `${variable} is not set: run the tests with npm test (or \`npm test -- <files>\` for a subset), which starts ${what}.`,
    );
  }
  let value: Partial<T>;
  try {
    value = JSON.parse(readFileSync(file, 'utf8')) as Partial<T>;
  } catch (error) {
    throw new Error(
      `${variable}=${file} cannot be read (${error instanceof Error ? error.message : error}); run the tests with npm test.`,
    );
  }
  const lacking = missing(value);
  if (lacking) throw new Error(`${variable}=${file} does not describe ${what} (no ${lacking}).`);
  return value as T;
}
