// The compiled query check (common/compiled-query-check.ts), held to the ValidationPipe over the read endpoints' DTOs.
import { ArgumentMetadata, Type, ValidationPipe } from '@nestjs/common';
import { ListChangesQuery } from '../changes/dto/list-changes.query';
import { AccountFieldsQuery, ListAccountsQuery } from './accounts/dto/list-accounts.query';
import { HistoryQuery } from './history/dto/history.dto';
import { ListPostsQuery, PostFieldsQuery } from './posts/dto/list-posts.query';
import { compileQueryCheck, QueryValidationPipe } from '../common/compiled-query-check';
import { ConsistencyQuery } from '../common/read-consistency';
import { validationFailed } from '../common/validate-dto';

const factory = (errors: Parameters<typeof validationFailed>[0]) => validationFailed(errors, { code: 'invalid_request', what: 'request' });
/** The pipe as it was configured before the compiled check: what every answer is held to. */
const reference = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true, exceptionFactory: factory });
const pipe = new QueryValidationPipe(factory);

const query = (metatype: Type): ArgumentMetadata => ({ type: 'query', metatype, data: undefined });

async function outcome(p: ValidationPipe, metatype: Type, value: Record<string, unknown>): Promise<unknown> {
  try {
    const result = (await p.transform(structuredClone(value), query(metatype))) as object;
    return { prototype: Object.getPrototypeOf(result) as object, value: { ...result } };
  } catch (error) {
    return { status: (error as { status?: number }).status, body: JSON.stringify(error) };
  }
}

/** Valid queries of each DTO: the compiled check accepts each (not the ValidationPipe). */
const VALID: Array<[Type, Record<string, unknown>]> = [
  [ListPostsQuery, {}],
  [ListPostsQuery, { limit: '50' }],
  [ListPostsQuery, { limit: '50', cursor: 'eyJhZnRlciI6IjEifQ' }],
  [ListPostsQuery, { limit: '50', status: 'published', platform: 'linkedin' }],
  [ListPostsQuery, { q: 'coffee', sort: 'publishedAt:desc' }],
  [ListPostsQuery, { tag: 'sale,rare-tag', hashtag: ['#a', '#b'], sort: 'scheduledFor:desc' }],
  [ListPostsQuery, { accountId: 'acct1', errorCategory: 'auth_expired', hasMedia: 'true', includeDeleted: 'false' }],
  [ListPostsQuery, { updatedSince: '2026-11-29T00:00:00Z', scheduledFrom: '2026-11-29', fields: 'id,title', workspace: 'default,other' }],
  [ListPostsQuery, { consistency: 'strong', visibility: 'public', profileId: 'p1', publishedTo: '2026-12-01T00:00:00.000Z' }],
  [PostFieldsQuery, { fields: 'id,status', asOf: '2026-11-29T10:15:30Z' }],
  [ListAccountsQuery, { limit: '10', platform: 'twitter', connected: 'true', q: 'user', fields: 'id' }],
  [AccountFieldsQuery, {}],
  [ListChangesQuery, { after: '12', limit: '100', types: 'post.changed,post.deleted', wait: '2.5', platform: 'x' }],
  [HistoryQuery, { limit: '5' }],
  [ConsistencyQuery, { consistency: 'eventual' }],
];

/** Queries the ValidationPipe refuses or rewrites: the compiled check leaves each to it. */
const OTHERS: Array<[Type, Record<string, unknown>]> = [
  [ListPostsQuery, { limit: '0' }],
  [ListPostsQuery, { limit: '501' }],
  [ListPostsQuery, { limit: '5x' }],
  [ListPostsQuery, { limit: ['5', '6'] }],
  [ListPostsQuery, { status: 'nope' }],
  [ListPostsQuery, { unknown: '1' }],
  [ListPostsQuery, { prototype: '1' }],
  [ListPostsQuery, { constructor: '1' }],
  [ListPostsQuery, { tag: '' }],
  [ListPostsQuery, { tag: 'a,,b' }],
  [ListPostsQuery, { tag: Array.from({ length: 21 }, (_, i) => `t${i}`) }],
  [ListPostsQuery, { sort: 'title' }],
  [ListPostsQuery, { q: 'x'.repeat(201) }],
  [ListPostsQuery, { q: 'a b c d e f g h i j k' }],
  [ListPostsQuery, { hasMedia: 'yes' }],
  [ListPostsQuery, { updatedSince: 'yesterday' }],
  [ListPostsQuery, { fields: 'id,nope' }],
  [ListPostsQuery, { workspace: 'Upper' }],
  [ListPostsQuery, { consistency: 'maybe' }],
  [ListPostsQuery, { platform: 'p'.repeat(51) }],
  [PostFieldsQuery, { asOf: 'soon' }],
  [ListAccountsQuery, { connected: '1' }],
  [ListChangesQuery, { after: 'abc' }],
  [ListChangesQuery, { wait: '99999' }],
  [ListChangesQuery, { types: 'post.nope' }],
];

describe('the compiled query check', () => {
  it.each(VALID)('accepts a valid %p query as the ValidationPipe does: %j', async (metatype, value) => {
    expect(compileQueryCheck(metatype)?.(structuredClone(value))).toBeDefined();
    const expected = await outcome(reference, metatype, value);
    expect(expected).toHaveProperty('prototype', metatype.prototype);
    expect(await outcome(pipe, metatype, value)).toEqual(expected);
  });

  it.each(OTHERS)('leaves %p %j to the ValidationPipe, which answers as before', async (metatype, value) => {
    expect(compileQueryCheck(metatype)?.(structuredClone(value))).toBeUndefined();
    expect(await outcome(pipe, metatype, value)).toEqual(await outcome(reference, metatype, value));
  });

  it('transforms as class-transformer does: lists split, integers and booleans read', () => {
    const accepted = compileQueryCheck(ListPostsQuery)?.({ limit: '20', tag: 'a, b', hashtag: ['#x', '#y,#z'], hasMedia: 'false' });
    expect(accepted).toBeInstanceOf(ListPostsQuery);
    expect({ ...accepted }).toMatchObject({ limit: 20, tag: ['a', 'b'], hashtag: ['#x', '#y', '#z'], hasMedia: false });
  });
});
