import { VARIABLES } from './variables';

/** The command that writes docs/configuration.md; a test fails when the file differs from what it would write. */
export const DOCS_CONFIG_COMMAND = 'npm run docs:config';

const cell = (markdown: string) => markdown.replace(/\|/g, '\\|');

function defaultOf(name: keyof typeof VARIABLES): string {
  const { kind, unset, note } = VARIABLES[name];
  if (kind.default === undefined) return unset === null ? 'unset' : `unset: ${unset}`;
  const value = `\`${String(kind.default)}\``;
  return note === null ? value : `${value} (${note})`;
}

/** docs/configuration.md, every line of it from VARIABLES (src/config/variables.ts). */
export function configurationDoc(): string {
  const rows = (Object.keys(VARIABLES) as (keyof typeof VARIABLES)[]).map((name) => {
    const { kind, meaning, secret } = VARIABLES[name];
    return `| \`${name}\` | ${cell(meaning)} | ${cell(defaultOf(name))} | ${cell(kind.accepts)} | ${secret ? 'yes' : ''} |`;
  });
  return [
    '<!-- Generated from src/config/variables.ts by `' + DOCS_CONFIG_COMMAND + '`: edit the declarations there, then run it. -->',
    '',
    '# pozy-sync: configuration',
    '',
    'Every environment variable the service reads, with its meaning and default.',
    '',
    'Contents:',
    '',
    '- [Variables](#variables)',
    '',
    '## Variables',
    '',
    'Validated once at boot; a bad value stops the service with a message naming the variable. An empty value counts as',
    'unset. `secret`: the value is, or holds, a credential.',
    '',
    '| variable | meaning | default | accepts | secret |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
