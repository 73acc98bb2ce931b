// Two writers of one file would interleave their lines: each file a sink writes (a file sink's path) and
// each dead-letter file must be a file of its own. Paths are compared as the file system resolves them: the
// absolute path, its directory's real path when the directory exists (a symbolic link to a directory, `..`).
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../../util/errors.ts';

export interface WrittenFile {
  path: string;
  /** Who writes it, as the message names it: "the sink file /data/events.jsonl", "the dead-letter file /data/dead.jsonl". */
  writer: string;
}

/** Throws a UsageError (exit 2) naming the first two writers of one file. */
export function checkFilesNotShared(files: readonly WrittenFile[]): void {
  const seen = new Map<string, WrittenFile>();
  for (const file of files) {
    const real = realPath(file.path);
    const first = seen.get(real);
    if (first)
      throw new UsageError(
        `${first.writer} and ${file.writer} would both write ${real}: give each its own file.`,
      );
    seen.set(real, file);
  }
}

/** The absolute path through its directory's real path, when that directory exists. */
function realPath(file: string): string {
  const absolute = path.resolve(file);
  const directory = path.dirname(absolute);
  try {
    return path.join(realpathSync(directory), path.basename(absolute));
  } catch {
    return absolute;
  }
}
