// How `npm test` (scripts/run-tests.ts) describes the servers it started to the test processes: a JSON
// file per server, named by an environment variable (KUBEDIFF_TEST_CLUSTER, KUBEDIFF_TEST_POSTGRES,
// KUBEDIFF_TEST_KAFKA). Written here by whoever started the server, read here once per test process,
// with one clear sentence when it is missing.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';

/**
 * Writes a server's description for readRunDescription(): JSON, private to this user (it holds tokens
 * and passwords). A running server's methods (stop, startServer, …) are left out, as JSON leaves out
 * every function: what is written is what a test process can use.
 */
export async function writeRunDescription(file: string, description: object): Promise<void> {
  await writeFile(file, `${JSON.stringify(description, null, 2)}\n`, { mode: 0o600 });
}

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
