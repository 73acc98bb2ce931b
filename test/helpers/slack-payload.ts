// What a Slack message posted by kubediff must be, checked independently of how kubediff builds it: Block Kit
// within Slack's documented limits (50 blocks, 150 characters per header, 3000 per section or context text,
// 10 context elements) and well under the size at which Slack rejects blocks (msg_blocks_too_long, about
// 13,000 characters); mrkdwn with &, < and > escaped and inline code closed, the top-level text included;
// every mrkdwn text object verbatim; outside inline code no formatting character, '@' or URL, and nowhere
// a bidi or invisible character as itself (inert(), what Slack would act on). Also: how many events a
// message accounts for ("37 changes in shop: …" stands for 37, a single event for 1).

export interface SlackPayload {
  text?: unknown;
  blocks?: unknown;
  channel?: unknown;
  unfurl_links?: unknown;
}

const BLOCK_KEYS: Record<string, string[]> = {
  header: ['type', 'text', 'block_id'],
  section: ['type', 'text', 'block_id', 'fields'],
  context: ['type', 'elements', 'block_id'],
  divider: ['type', 'block_id'],
};

export function blockKitProblems(payload: SlackPayload): string[] {
  const problems: string[] = [];
  const { text, blocks } = payload;
  if (typeof text !== 'string' || text.trim() === '')
    problems.push('no top-level text (notifications need it)');
  else if (text.length > 40_000) problems.push(`text has ${text.length} characters (max 40,000)`);
  else problems.push(...mrkdwnProblems(text).map((p) => `top-level text: ${p}`));
  problems.push(...invisibleProblems(JSON.stringify(payload)));
  if (!Array.isArray(blocks)) return [...problems, 'blocks is not an array'];
  if (blocks.length === 0) problems.push('no blocks');
  if (blocks.length > 50) problems.push(`${blocks.length} blocks (max 50)`);
  let total = typeof text === 'string' ? text.length : 0;
  blocks.forEach((block: unknown, index) => {
    const where = `block ${index}`;
    if (!block || typeof block !== 'object') {
      problems.push(`${where} is not an object`);
      return;
    }
    const b = block as Record<string, unknown>;
    const allowed = BLOCK_KEYS[String(b.type)];
    if (!allowed) {
      problems.push(`${where} has unknown type ${String(b.type)}`);
      return;
    }
    for (const key of Object.keys(b))
      if (!allowed.includes(key)) problems.push(`${where} has unknown key ${key}`);
    const checkText = (value: unknown, label: string, max: number, types: string[]): void => {
      const t = value as { type?: unknown; text?: unknown; emoji?: unknown; verbatim?: unknown } | undefined;
      if (!t || typeof t !== 'object') {
        problems.push(`${label}: missing text object`);
        return;
      }
      if (!types.includes(String(t.type))) problems.push(`${label}: text type ${String(t.type)}`);
      if (typeof t.text !== 'string' || t.text.length === 0) {
        problems.push(`${label}: empty text`);
        return;
      }
      if (t.text.length > max) problems.push(`${label}: ${t.text.length} characters (max ${max})`);
      total += t.text.length;
      if (t.type === 'mrkdwn') problems.push(...mrkdwnProblems(t.text).map((p) => `${label}: ${p}`));
      if (t.type === 'mrkdwn' && t.verbatim !== true)
        problems.push(`${label}: not verbatim (Slack would link URLs and parse mentions)`);
    };
    if (b.type === 'header') checkText(b.text, `${where} (header)`, 150, ['plain_text']);
    if (b.type === 'section') checkText(b.text, `${where} (section)`, 3000, ['mrkdwn', 'plain_text']);
    if (b.type === 'context') {
      const elements = b.elements;
      if (!Array.isArray(elements) || elements.length === 0) problems.push(`${where} (context): no elements`);
      else {
        if (elements.length > 10) problems.push(`${where} (context): ${elements.length} elements (max 10)`);
        for (const [i, element] of elements.entries()) {
          checkText(element, `${where} (context element ${i})`, 3000, ['mrkdwn', 'plain_text']);
        }
      }
    }
  });
  if (total > 12_000) problems.push(`${total} characters of text in all (Slack rejects much beyond 12,000)`);
  return problems;
}

function mrkdwnProblems(text: string): string[] {
  const problems: string[] = [];
  if (/&(?!amp;|lt;|gt;)/.test(text)) problems.push(`unescaped & in ${JSON.stringify(text.slice(0, 80))}`);
  if (/[<>]/.test(text)) problems.push(`unescaped < or > in ${JSON.stringify(text.slice(0, 80))}`);
  for (const line of text.split('\n')) {
    if ((line.match(/`/g)?.length ?? 0) % 2 === 1)
      problems.push(`unclosed inline code in ${JSON.stringify(line)}`);
    // Outside inline code (odd pieces), what Slack formats, links or mentions, our own markup aside.
    const outside = line
      .split('`')
      .filter((_, index) => index % 2 === 0)
      .join(' ')
      // kubediff's own icons, and emoji codes as such.
      .replace(/:(heavy_plus_sign|pencil2|wastebasket):/g, 'x')
      .replace(/(^|\s|\()\*(?=\S)|(?<=\S)\*(?=$|\s|\))/g, '$1')
      .replace(/(^|\s|\()_(?=\S)|(?<=\S)_(?=$|\s|\))/g, '$1');
    if (/[*_~@]|:\/\/|\bwww\.|:[\w+-]*[a-z][\w+-]*:/i.test(outside))
      problems.push(`a mention, link or formatting character outside code in ${JSON.stringify(line)}`);
  }
  return problems;
}

/** Bidi controls and zero-width or other invisible characters must be shown as escapes, never as themselves. */
export function invisibleProblems(text: string): string[] {
  const found = text.match(/[\p{Cf}\u2028\u2029]/gu);
  return found && found.length > 0
    ? [
        `invisible or bidi characters as themselves: ${found.map((c) => `U+${c.codePointAt(0)!.toString(16)}`).join(', ')}`,
      ]
    : [];
}

/** How many events a message stands for: "[cluster] 37 changes in shop: …" → 37; a single event → 1. */
export function eventsInMessage(payload: SlackPayload): number {
  const text = typeof payload.text === 'string' ? payload.text : '';
  const match = /^(?:\[[^\]]*\] )?([\d,]+) changes? /.exec(text);
  return match ? Number(match[1]!.replaceAll(',', '')) : 1;
}

/** Every text of a message, joined: for assertions on what a person sees. */
export function visibleText(payload: SlackPayload): string {
  const parts: string[] = [];
  for (const block of (payload.blocks as Record<string, unknown>[]) ?? []) {
    const text = block.text as { text?: string } | undefined;
    if (text?.text) parts.push(text.text);
    for (const element of (block.elements as { text?: string }[] | undefined) ?? []) {
      if (element.text) parts.push(element.text);
    }
  }
  return parts.join('\n');
}
