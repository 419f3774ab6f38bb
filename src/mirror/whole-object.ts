import { applyDecorators } from '@nestjs/common';
import { ArrayMaxSize, IsIn } from 'class-validator';
import { ListParam } from '../common/query-params';

/** The fields of a mirrored resource: Pozy's known ones, then the mirror's own, in the order they are answered. */
export interface FieldOrder {
  pozy: readonly string[];
  mirror: readonly string[];
}

/** What `fields=` may name. */
export const fieldNames = (order: FieldOrder): string[] => [...order.pozy, ...order.mirror];

/**
 * A resource's fields in the documented order (jsonb keeps its own): Pozy's known fields, then those pozy-sync does
 * not know, then the mirror's. With `fields`, only those.
 */
export function present(body: Record<string, unknown>, order: FieldOrder, fields?: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (key: string) => {
    if (key in body && (fields === undefined || fields.includes(key))) out[key] = body[key];
  };
  order.pozy.forEach(put);
  if (fields === undefined) for (const key of Object.keys(body)) if (!order.pozy.includes(key) && !order.mirror.includes(key)) out[key] = body[key];
  order.mirror.forEach(put);
  return out;
}

/** `fields=`: a comma-separated list of the resource's field names; an unknown name is a 400 naming `fields`. */
export const FieldsParam = (order: FieldOrder, what: string) => {
  const names = fieldNames(order);
  return applyDecorators(
    ListParam(`Only these fields of each ${what} (comma-separated): ${names.join(', ')}.`, `${names[0]},${names[names.length - 1]}`),
    ArrayMaxSize(names.length),
    IsIn(names, { each: true, message: `fields must name fields of ${what === 'account' ? 'an' : 'a'} ${what}: ${names.join(', ')}` }),
  );
};
