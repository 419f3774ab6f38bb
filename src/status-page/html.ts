/** Markup that is already safe: made by `html` or `raw`. Anything else interpolated into `html` is escaped. */
export class Html {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

export type Interpolated = Html | string | number | boolean | null | undefined | readonly Interpolated[];

function render(value: Interpolated): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return (value as readonly Interpolated[]).map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/**
 * A tagged template that escapes every interpolated value (for text and for quoted attribute values alike),
 * except Html made by this same tag: one place where escaping happens, so no value can be forgotten.
 */
export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  return new Html(strings.reduce((out, text, i) => out + text + (i < values.length ? render(values[i]) : ''), ''));
}

/** Fixed markup written in this code (the page's stylesheet and script), never data. */
export const raw = (markup: string): Html => new Html(markup);
