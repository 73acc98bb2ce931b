// What a log shipper and a person with zcat would read of a file sink: its rotated files (gzipped or not
// yet), oldest first, then the live file, as lines; a line without its newline fails the test.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

export async function readFileSinkLines(livePath: string): Promise<string[]> {
  const dir = path.dirname(livePath);
  const base = path.basename(livePath);
  const rotated = (await readdir(dir))
    .filter((name) => name.startsWith(`${base}.`) && !name.endsWith('.tmp'))
    .sort();
  const texts: string[] = [];
  for (const name of rotated) {
    const content = await readFile(path.join(dir, name));
    texts.push((name.endsWith('.gz') ? gunzipSync(content) : content).toString('utf8'));
  }
  texts.push(await readFile(livePath, 'utf8').catch(() => ''));
  return texts.flatMap((text) => {
    if (text === '') return [];
    if (!text.endsWith('\n')) throw new Error(`a file ends with an unfinished line: ${text.slice(-80)}`);
    return text.slice(0, -1).split('\n');
  });
}
