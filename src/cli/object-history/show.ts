// `kubediff show <type>/<name> [--at <time|duration|event id>] [-o yaml|json]`: the object as it was then,
// rebuilt from the history, printed like `kubectl get -o yaml` (docs/history.md).

import { objectYaml } from '../../diff/object-yaml.ts';
import { printable } from '../../util/terminal-text.ts';
import { HistorySource, type HistorySourceFlags } from './history-source.ts';
import { describeRef } from './object-timeline.ts';
import { describePoint, parseTimePoint, type TimePoint } from './time-point.ts';
import { absence, type CommandIo, versionNotes, versionText } from './version-notes.ts';

export interface ShowFlags extends HistorySourceFlags {
  at?: string;
  output?: 'yaml' | 'json';
}

export async function runShow(target: string, flags: ShowFlags, io: CommandIo): Promise<void> {
  const now = (io.now ?? Date.now)();
  const point: TimePoint =
    flags.at !== undefined ? parseTimePoint('--at', flags.at, now) : { kind: 'time', ms: now };
  const source = await HistorySource.open(flags, 'show');
  try {
    const timeline = await source.timeline(target);
    const version = timeline.versionAt(point);
    if (!version.object) throw absence(timeline.ref, point, version);
    const notes = [
      `${describeRef(timeline.ref)} at ${describePoint(point)}: ${versionText(version)}.`,
      ...versionNotes(timeline.ref, [version.object]),
    ];
    if (flags.output === 'json') {
      for (const note of notes) io.stderr.write(`kubediff: ${printable(note)}\n`);
      io.stdout.write(`${JSON.stringify(version.object, null, 2)}\n`);
      return;
    }
    const yaml = objectYaml(version.object)
      .split('\n')
      .map((line) => (io.isTTY ? printable(line) : line));
    const text = [...notes.map((note) => `# ${printable(note)}`), ...yaml].join('\n');
    io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  } finally {
    await source.close();
  }
}
