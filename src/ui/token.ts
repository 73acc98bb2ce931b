// --token-file / --ui-token-file: the bearer token of the UI's API, read from a file so that it never
// appears in a process list or a shell history (a Kubernetes Secret mounted as a file, typically).
import { readFileSync } from 'node:fs';
import { errorMessage, UsageError } from '../util/errors.ts';

export function readTokenFile(path: string, flag: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `cannot read ${flag} ${path}: ${errorMessage(error).replace(/\.$/, '')}; pass a readable file that holds the token.`,
    );
  }
  const token = text.trim();
  if (token === '' || /\s/.test(token)) {
    throw new UsageError(
      `${flag} ${path} must hold one token on one line (no spaces), e.g. the output of \`openssl rand -hex 32\`.`,
    );
  }
  return token;
}
