// What a chat message says of an OUTCOME (docs/outcomes.md), before any platform's markup: the follow-up
// of the change's (or story's) message, and the headline that a Slack bot writes over that message's first
// line: 'web shop:1.5 by alice → degraded in 40s: 3/3 pods CrashLoopBackOff, last OOMKilled (exit 137)'.
import type { ChangeEvent, OutcomeEvent, Verdict } from '../../../events/event.ts';
import { objectKey } from '../../../kube/types.ts';
import { plural } from '../../../util/count-text.ts';
import { formatDuration } from '../../../util/duration.ts';
import { byText } from '../../who.ts';
import { type ChatMessage, clusterLine, elideBy, type Line, prefix, truncateText } from './chat-message.ts';

/** Pods and Warning Events listed in a follow-up; the summary line counts them all. */
const LISTED = 10;
/** Longest evidence text (a reason's message, a Warning's) in a line. */
const MAX_TEXT = 200;

const VERDICT_EMOJI: Record<Verdict, string> = {
  healthy: '✅',
  degraded: '⚠️',
  failed: '❌',
  superseded: '⏭️',
  unknown: '❔',
};

/**
 * The image a change rolled out ('shop:1.5', without its registry), when it changed a container's image:
 * what people call a rollout by.
 */
export function rolledOutImage(change: ChangeEvent): string | undefined {
  const image = (change.changes ?? []).find((c) =>
    /^\/spec\/(?:template\/spec\/|jobTemplate\/spec\/template\/spec\/)?(?:init)?[cC]ontainers\/\d+\/image$/.test(
      c.path,
    ),
  )?.to;
  return typeof image === 'string' ? image.slice(image.lastIndexOf('/') + 1) : undefined;
}

/**
 * 'web shop:1.5 by alice → degraded in 40s: 3/3 pods CrashLoopBackOff, last OOMKilled (exit 137)': the
 * workload, the image it rolled out (when known), who, the verdict, when, and the evidence's summary.
 */
export function outcomeHeadline(event: OutcomeEvent, image?: string): Line {
  const by = elideBy(byText(event.by));
  return [
    { text: `${prefix(event.cluster)}${event.object.name}` },
    ...(image ? [{ text: ' ' }, { text: image }] : []),
    ...(by ? [{ text: ' by ' }, { text: by }] : []),
    { text: ` → ${event.verdict} in ${formatDuration(event.after * 1000)}: ` },
    { text: truncateText(event.evidence.summary, MAX_TEXT) },
  ];
}

/** The follow-up message of an OUTCOME: its verdict, the pods that are not well, the Warning Events. */
export function outcomeMessage(event: OutcomeEvent, image?: string): ChatMessage {
  const { evidence } = event;
  const by = elideBy(byText(event.by));
  const troubled = evidence.pods.filter((pod) => !pod.ready || pod.restarts > 0);
  const podLines = troubled.slice(0, LISTED).map((pod): Line => {
    const termination = pod.lastTermination
      ? `, last ${pod.lastTermination.reason ?? 'terminated'}${pod.lastTermination.exitCode !== undefined ? ` (exit ${pod.lastTermination.exitCode})` : ''}`
      : '';
    const restarts = pod.restarts > 0 ? `, ${plural(pod.restarts, 'restart')}` : '';
    return [
      { text: '• pod ' },
      { text: pod.name, style: 'code' },
      { text: `: ${pod.reason ?? pod.phase}${restarts}${termination}` },
      ...(pod.message
        ? [{ text: ` — ${truncateText(pod.message, MAX_TEXT)}`, style: 'italic' as const }]
        : []),
    ];
  });
  if (troubled.length > LISTED) podLines.push([{ text: `…and ${troubled.length - LISTED} more pods` }]);
  const warningLines = evidence.warnings
    .slice(0, LISTED)
    .map(
      (warning): Line => [
        { text: '• ' },
        { text: warning.object, style: 'code' },
        { text: ' ' },
        { text: warning.reason, style: 'bold' },
        { text: ` ×${warning.count}: ${truncateText(warning.message, MAX_TEXT)}` },
      ],
    );
  const failedConditions = evidence.conditions
    .filter((condition) => condition.reason === 'ProgressDeadlineExceeded' || condition.status === 'False')
    .map(
      (condition): Line => [
        { text: '• ' },
        { text: `${condition.type}=${condition.status}`, style: 'code' },
        ...(condition.reason ? [{ text: ` ${condition.reason}` }] : []),
        ...(condition.message ? [{ text: `: ${truncateText(condition.message, MAX_TEXT)}` }] : []),
      ],
    );
  const sections = [
    ...(podLines.length > 0 ? [{ lines: [[{ text: 'Pods:', style: 'bold' as const }], ...podLines] }] : []),
    ...(warningLines.length > 0
      ? [{ lines: [[{ text: 'Warning events:', style: 'bold' as const }], ...warningLines] }]
      : []),
    ...(failedConditions.length > 0
      ? [{ lines: [[{ text: 'Conditions:', style: 'bold' as const }], ...failedConditions] }]
      : []),
  ];
  const subject = `${event.object.kind} ${objectKey(event.object)}`;
  return {
    summary: outcomeHeadline(event, image),
    title: `${VERDICT_EMOJI[event.verdict]} ${subject} ${event.verdict} in ${formatDuration(event.after * 1000)}`,
    context: [
      [{ text: evidence.summary }],
      ...(by ? [[{ text: 'by ' }, { text: by, style: 'bold' }] satisfies Line] : []),
      ...(event.cluster ? [clusterLine(event.cluster)] : []),
      [{ text: `${event.time.slice(11, 19)} UTC` }],
      ...(event.offline ? [[{ text: 'the change was found offline', style: 'italic' }] satisfies Line] : []),
    ],
    sections,
    note: [evidence.note, `outcome of ${event.follows.join(', ')}`].filter(Boolean).join(' · '),
    inFull: true,
  };
}
