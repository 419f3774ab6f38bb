import { boundedText, MAX_ERROR_TEXT_BYTES } from './bounded-text';

const bytes = (text: string) => Buffer.byteLength(text);

describe('boundedText: what an error text, a dead letter or a log line keeps of a text from elsewhere', () => {
  it('keeps a short text as it is', () => {
    expect(boundedText('HTTP 400 {"error":"bad id"}')).toBe('HTTP 400 {"error":"bad id"}');
    expect(boundedText('x'.repeat(MAX_ERROR_TEXT_BYTES))).toBe('x'.repeat(MAX_ERROR_TEXT_BYTES));
  });

  it('keeps the beginning of a long one, within the bound, saying it was cut and how long it was', () => {
    const cut = boundedText(`HTTP 400 ${'a'.repeat(100 * 1024 * 1024)}`);

    expect(bytes(cut)).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
    expect(bytes(cut)).toBeGreaterThan(MAX_ERROR_TEXT_BYTES - 100);
    expect(cut).toMatch(/^HTTP 400 a+ … \[cut: 104857609 bytes in all\]$/);
  });

  it('cuts between characters, never inside one, and counts UTF-8 bytes', () => {
    for (const char of ['é', '€', '😀']) {
      const cut = boundedText(char.repeat(5_000), 100);
      expect(bytes(cut)).toBeLessThanOrEqual(100);
      expect(cut).toMatch(new RegExp(`^(${char})+ … \\[cut: \\d+ bytes in all\\]$`, 'u'));
    }
  });

  it('turns what PostgreSQL cannot store into U+FFFD, so the row can be written', () => {
    expect(boundedText('a\u0000b\ud800c')).toBe('a\ufffdb\ufffdc');
    expect(bytes(boundedText('\u0000'.repeat(MAX_ERROR_TEXT_BYTES)))).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
  });
});
