import { ValidateBy, ValidationOptions } from 'class-validator';

/**
 * The one ISO 8601 form the service reads, as RFC 3339 writes it: `YYYY-MM-DD`, optionally followed by
 * `Thh:mm[:ss[.fraction]]` and a zone (`Z`, `±hh:mm` or `±hhmm`). class-validator's IsISO8601 also lets through
 * week and ordinal dates (`2024-W01`, `2024-001`), reduced and expanded years and `24:00`, which JavaScript
 * and PostgreSQL read differently or not at all; every form here means one instant to both. Years 0001 to 9999.
 */
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

export interface InstantOptions {
  /** A time and a zone are required (an event's timestamp); otherwise a date alone is midnight UTC, and a time without a zone is UTC. */
  dateTime?: boolean;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const daysIn = (year: number, month: number) => (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]);

/** The instant `text` names, or undefined when it is not one of the accepted forms or not a real date and time. */
export function parseInstant(text: unknown, options: InstantOptions = {}): Date | undefined {
  if (typeof text !== 'string') return undefined;
  const m = INSTANT.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = m;
  if (options.dateTime && (h === undefined || zone === undefined)) return undefined;
  const [year, month, day, hour, minute, second] = [y, mo, d, h ?? '0', mi ?? '0', s ?? '0'].map(Number);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (zone !== undefined && zone !== 'Z') {
    const [zh, zm = '0'] = [zone.slice(1, 3), zone.slice(3).replace(':', '')];
    if (Number(zh) > 23 || Number(zm) > 59) return undefined;
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (Number(zh) * 60 + Number(zm));
  }
  // Date.UTC reads years 0 to 99 as 1900 to 1999: the year is set on its own.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number((fraction ?? '').padEnd(3, '0').slice(0, 3)));
  return new Date(date.getTime() - offsetMinutes * 60_000);
}

/** Validates a string with parseInstant (see there for the forms it takes). */
export const IsInstant = (options: InstantOptions = {}, validationOptions?: ValidationOptions): PropertyDecorator =>
  ValidateBy(
    {
      name: 'isInstant',
      validator: {
        validate: (value: unknown) => parseInstant(value, options) !== undefined,
        defaultMessage: (args) =>
          options.dateTime
            ? `${args?.property} must be an ISO 8601 date-time with a zone, such as 2026-11-29T10:15:30Z`
            : `${args?.property} must be an ISO 8601 date (2026-11-29) or date-time (2026-11-29T10:15:30Z), years 0001 to 9999`,
      },
    },
    validationOptions,
  );
