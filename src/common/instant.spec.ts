import { parseInstant } from './instant';

describe('parseInstant: the one ISO 8601 form the service reads', () => {
  it.each([
    ['2026-11-29', '2026-11-29T00:00:00.000Z'],
    ['2026-11-29T10:15Z', '2026-11-29T10:15:00.000Z'],
    ['2026-11-29T10:15:30Z', '2026-11-29T10:15:30.000Z'],
    ['2026-11-29T10:15:30.123456789Z', '2026-11-29T10:15:30.123Z'],
    ['2026-11-29T10:15:30+02:00', '2026-11-29T08:15:30.000Z'],
    ['2026-11-29T10:15:30-0130', '2026-11-29T11:45:30.000Z'],
    ['2026-11-29T10:15:30+05', '2026-11-29T05:15:30.000Z'],
    ['2026-11-29T10:15:30', '2026-11-29T10:15:30.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['0050-06-01', '0050-06-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.000Z'],
  ])('reads %s as %s', (text, iso) => {
    expect(parseInstant(text)?.toISOString()).toBe(iso);
  });

  it.each([
    ['2024-W01'],
    ['2024-W01-1'],
    ['2024-001'],
    ['2024-01'],
    ['2024'],
    ['20240101'],
    ['20240101T100000Z'],
    ['+002024-01-01'],
    ['-2024-01-01'],
    ['0000-01-01'],
    ['2023-02-29'],
    ['2024-13-01'],
    ['2024-01-32'],
    ['2024-01-01T24:00:00Z'],
    ['2024-01-01T10:60Z'],
    ['2024-01-01T10:00:60Z'],
    ['2024-01-01T10Z'],
    ['2024-01-01T10:00:00+24:00'],
    ['2024-01-01T10:00:00+01:60'],
    ['2024-01-01 10:00:00Z'],
    ['2024-01-01t10:00:00z'],
    ['2024-01-01T10:00:00.Z'],
    [' 2024-01-01'],
    [''],
  ])('refuses %s', (text) => {
    expect(parseInstant(text)).toBeUndefined();
  });

  it('wants a time and a zone for a date-time (an event timestamp)', () => {
    expect(parseInstant('2026-11-29T10:15:30Z', { dateTime: true })).toBeInstanceOf(Date);
    expect(parseInstant('2026-11-29T10:15:30', { dateTime: true })).toBeUndefined();
    expect(parseInstant('2026-11-29', { dateTime: true })).toBeUndefined();
  });

  it('refuses what is not a string', () => {
    expect(parseInstant(20261129)).toBeUndefined();
    expect(parseInstant(undefined)).toBeUndefined();
  });
});
