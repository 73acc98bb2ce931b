// What Teams, Discord, Mattermost and Google Chat accept, checked independently of how kubediff builds
// its messages: each platform's documented payload shape and limits, and its 429 answer with its own
// retry hint (Retry-After; Discord's `retry_after` body; Mattermost's X-Ratelimit-Reset); and that nothing
// in it is something the platform would act on (inertProblems: a mention, a link, markup, a bidi or
// invisible character as itself). A loopback HttpReceiver answers 400 with the problems to a payload that
// breaks the rules, and 429 to a message that comes sooner than `minIntervalMs` after the previous one;
// otherwise its script, else 200.

import type { ChatPlatformName } from './chat-platforms.ts';
import { type HttpReceiver, HttpReceiver as Receiver, type Reply } from './http-receiver.ts';
import { invisibleProblems } from './slack-payload.ts';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

export function payloadProblems(platform: ChatPlatformName, raw: string): string[] {
  const problems: string[] = [];
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return ['not JSON'];
  }
  if (!isObject(body)) return ['not an object'];
  problems.push(...inertProblems(platform, body), ...invisibleProblems(raw));
  const bytes = Buffer.byteLength(raw);
  if (platform === 'discord') {
    if (text(body.content).length > 2000) problems.push('content over 2,000 characters');
    const embeds = body.embeds;
    if (!Array.isArray(embeds) || embeds.length === 0 || embeds.length > 10) problems.push('1 to 10 embeds');
    let total = 0;
    for (const embed of Array.isArray(embeds) ? embeds : []) {
      if (!isObject(embed)) continue;
      const title = text(embed.title);
      const description = text(embed.description);
      const footer = isObject(embed.footer) ? text(embed.footer.text) : '';
      if (title.length > 256) problems.push('embed title over 256');
      if (description.length > 4096) problems.push('embed description over 4,096');
      if (footer.length > 2048) problems.push('embed footer over 2,048');
      if (Array.isArray(embed.fields) && embed.fields.length > 25) problems.push('over 25 fields');
      total += title.length + description.length + footer.length;
    }
    if (total > 6000) problems.push(`embeds hold ${total} characters (max 6,000)`);
    if (!isObject(body.allowed_mentions)) problems.push('mentions not switched off');
  } else if (platform === 'mattermost') {
    const attachments = Array.isArray(body.attachments) ? body.attachments : [];
    const all =
      text(body.text).length +
      attachments.reduce(
        (sum: number, a: unknown) => sum + (isObject(a) ? text(a.text).length + text(a.title).length : 0),
        0,
      );
    if (text(body.text) === '' && attachments.length === 0) problems.push('no text');
    if (all > 16_383) problems.push(`${all} characters (a post holds at most 16,383)`);
  } else if (platform === 'teams') {
    if (bytes > 28 * 1024) problems.push(`${bytes} bytes (Teams takes at most 28 KB)`);
    if (body.type !== 'message') problems.push('type is not message');
    const attachments = Array.isArray(body.attachments) ? body.attachments : [];
    const card = isObject(attachments[0]) ? attachments[0] : undefined;
    if (card?.contentType !== 'application/vnd.microsoft.card.adaptive') problems.push('no Adaptive Card');
    const content = isObject(card?.content) ? card.content : {};
    if (content.type !== 'AdaptiveCard' || typeof content.version !== 'string')
      problems.push('not an AdaptiveCard with a version');
    if (!Array.isArray(content.body) || content.body.length === 0) problems.push('empty card body');
    for (const element of Array.isArray(content.body) ? content.body : [])
      if (!isObject(element) || element.type !== 'TextBlock' || text(element.text) === '')
        problems.push('a body element is not a TextBlock with text');
  } else {
    if (bytes > 32_000) problems.push(`${bytes} bytes (Google Chat takes at most 32,000)`);
    if (text(body.text).length > 4096) problems.push('text over 4,096');
    const cards = Array.isArray(body.cardsV2) ? body.cardsV2 : [];
    const card = isObject(cards[0]) && isObject(cards[0].card) ? cards[0].card : undefined;
    if (!card || !isObject(card.header) || text(card.header.title) === '')
      problems.push('no card with a header title');
    for (const section of Array.isArray(card?.sections) ? card.sections : []) {
      const widgets = isObject(section) && Array.isArray(section.widgets) ? section.widgets : [];
      for (const widget of widgets) {
        const paragraph =
          isObject(widget) && isObject(widget.textParagraph) ? text(widget.textParagraph.text) : '';
        if (paragraph === '') problems.push('a widget without text');
        const tags = paragraph.match(/<\/?([a-z]+)/g) ?? [];
        for (const tag of tags)
          if (!/^<\/?(b|i|u|font|br|a)$/.test(tag)) problems.push(`tag ${tag} not allowed`);
      }
    }
  }
  return problems;
}

/** The title a person sees first, whatever the platform. */
export function titleOf(platform: ChatPlatformName, body: Json): string {
  if (platform === 'discord') return text((body.embeds as Json[])[0]?.title);
  if (platform === 'mattermost') return text((body.attachments as Json[])[0]?.title);
  if (platform === 'teams') {
    const content = ((body.attachments as Json[])[0]?.content ?? {}) as Json;
    return text((content.body as Json[])[0]?.text);
  }
  const card = (body.cardsV2 as Json[])[0]?.card as Json | undefined;
  return text((card?.header as Json | undefined)?.title);
}

/** How many events a message stands for: "37 changes in shop" → 37; one event's title → 1. */
export function eventsInChatMessage(platform: ChatPlatformName, body: Json): number {
  const match = /^([\d,]+) changes /.exec(titleOf(platform, body));
  return match ? Number(match[1]?.replaceAll(',', '')) : 1;
}

/** Each platform's 429, with its own retry hint. */
export function rateLimited(platform: ChatPlatformName, seconds: number): Reply {
  if (platform === 'discord')
    return {
      status: 429,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'You are being rate limited.', retry_after: seconds, global: false }),
    };
  if (platform === 'mattermost')
    return { status: 429, headers: { 'x-ratelimit-reset': String(seconds) }, body: 'limit exceeded' };
  if (platform === 'google-chat')
    return {
      status: 429,
      headers: { 'retry-after': String(seconds) },
      body: '{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}',
    };
  return { status: 429, headers: { 'retry-after': String(seconds) }, body: 'Too Many Requests' };
}

/** A receiver that enforces `platform`'s rules: 400 for a bad payload, 429 when messages come too fast. */
export async function startChatReceiver(
  platform: ChatPlatformName,
  minIntervalMs: number,
): Promise<HttpReceiver> {
  let lastAccepted = 0;
  const receiver: HttpReceiver = await Receiver.start({
    respond: (request) => {
      const problems = payloadProblems(platform, request.body);
      if (problems.length > 0) return { status: 400, body: problems.join('; ') };
      if (request.at - lastAccepted < minIntervalMs) return rateLimited(platform, 1);
      lastAccepted = request.at;
      // Valid and not too fast: the script (receiver.script()), else 200.
      return undefined;
    },
  });
  return receiver;
}

/**
 * Markdown outside inline code, each backslash-escaped character taken out: what a platform reads as
 * markup (CommonMark: an escaped backtick opens no code, a backslash in code is itself).
 */
function outsideCode(markdown: string, hasCode = true): string {
  let out = '';
  let inCode = false;
  for (let i = 0; i < markdown.length; i++) {
    const c = markdown[i]!;
    // What was code or escaped stands as one plain letter.
    if (hasCode && c === '`') {
      inCode = !inCode;
      out += 'x';
    } else if (inCode) continue;
    else if (c === '\\') {
      i++;
      out += 'x';
    } else out += c;
  }
  return out;
}

/**
 * What `platform` would act on in a payload: a mention, a link, markup that is not kubediff's own. Each
 * platform's rules as documented (see the renderers in src/sinks/ for the references).
 */
export function inertProblems(platform: ChatPlatformName, body: Json): string[] {
  const problems: string[] = [];
  const check = (field: string, value: unknown, active: RegExp) => {
    if (typeof value === 'string' && active.test(value))
      problems.push(`${field} holds something ${platform} acts on: ${JSON.stringify(value.slice(0, 120))}`);
  };
  // Our own markup in markdown: **bold**, _italic_ at word edges, the bullets and arrows.
  const ownMarkup = (text: string) =>
    text.replace(/\*\*/g, ' ').replace(/(^|\s|\()_(?=\S)|(?<=\S)_(?=$|\s|\))/g, '$1');
  if (platform === 'discord' || platform === 'mattermost') {
    const attachments = Array.isArray(body.attachments) ? body.attachments : [];
    const embeds = Array.isArray(body.embeds) ? body.embeds : [];
    const markdown: [string, unknown][] = [
      ['content', body.content],
      ['text', body.text],
      ...attachments.map((a, i): [string, unknown] => [
        `attachments[${i}].text`,
        isObject(a) ? a.text : undefined,
      ]),
      ...embeds.map((e, i): [string, unknown] => [
        `embeds[${i}].description`,
        isObject(e) ? e.description : undefined,
      ]),
    ];
    for (const [field, value] of markdown) {
      if (typeof value !== 'string') continue;
      check(field, ownMarkup(outsideCode(value)), /[@*_~[\]<>&|#]|:\/\/|\bwww\./i);
      if (platform === 'mattermost') check(field, value, /[<>]/);
    }
    if (platform === 'mattermost')
      for (const [i, a] of attachments.entries())
        if (isObject(a))
          for (const key of ['title', 'footer', 'fallback'])
            check(`attachments[${i}].${key}`, a[key], /[<>]/);
    if (platform === 'discord') {
      const mentions = isObject(body.allowed_mentions) ? body.allowed_mentions : {};
      if (!Array.isArray(mentions.parse) || mentions.parse.length > 0)
        problems.push('mentions not switched off');
    }
  } else if (platform === 'google-chat') {
    check('text', typeof body.text === 'string' ? outsideCode(body.text) : '', /[*_~@]|:\/\/|\bwww\./i);
    check('text', body.text, /[<>]/);
  } else if (platform === 'teams') {
    const content = isObject((body.attachments as Json[] | undefined)?.[0]?.content)
      ? ((body.attachments as Json[])[0]!.content as Json)
      : {};
    for (const [i, element] of (Array.isArray(content.body) ? content.body : []).entries())
      if (isObject(element))
        check(
          `body[${i}].text`,
          ownMarkup(outsideCode(text(element.text), false)),
          /[*_[\]<{}]|:\/\/|\bwww\./i,
        );
  }
  return problems;
}
