import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { PozyAccountDto } from './pozy-account.dto';
import { checkedAccount, checkedPost } from './pozy-answer-check';
import { PozyPostDto } from './pozy-post.dto';

/** What the DTO makes of a value: the object it keeps (as JSON keeps it), or that it refuses it. */
function byDto(cls: ClassConstructor<object>, value: object): unknown {
  try {
    const dto = plainToInstance(cls, value);
    return validateSync(dto).length > 0 ? 'refused' : JSON.parse(JSON.stringify(dto));
  } catch {
    return 'refused';
  }
}

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const POST = {
  _id: '64b7f0c2a1b2c3d4e5f60718',
  userId: { _id: 'u1', name: 'Ann' },
  title: 'Launch',
  content: 'Hello',
  status: 'scheduled',
  scheduledFor: '2026-12-01T10:00:00.000Z',
  timezone: 'UTC',
  platforms: [
    { platform: 'twitter', accountId: { _id: 'acc1', username: 'ann' }, status: 'pending', errorCategory: 'auth', pozyLabsReach: 3 },
    { platform: 'linkedin', accountId: 'acc2', status: 'published', publishedAt: '2026-12-01T10:00:01Z', platformPostUrl: null },
  ],
  mediaItems: [{ url: 'https://example.test/a.png', meta: { w: 1, tags: ['x', null] } }],
  tags: ['sale'],
  metadata: { nested: { deeper: [1, 'two', { three: true }] } },
  createdAt: '2026-11-30T09:00:00.000Z',
  updatedAt: '2026-11-30T09:30:00.000Z',
};

const ACCOUNT = {
  _id: 'acc1',
  platform: 'twitter',
  profileId: { _id: 'prof1', name: 'Main' },
  username: 'ann',
  displayName: null,
  isActive: true,
  needsReconnection: false,
  followersCount: 12,
  metadata: { a: [1, { b: 2 }] },
};

/** Values tried in every field: each type JSON has, empty and not, and dates good and bad. */
const VALUES: unknown[] = [
  undefined,
  null,
  '',
  ' ',
  'x',
  0,
  1.5,
  true,
  false,
  [],
  ['x'],
  {},
  { _id: 'ref' },
  { _id: '' },
  { _id: 7 },
  { id: 'ref' },
  '2026-12-01',
  '2026-12-01T10:00:00Z',
  '2026-12-01T10:00:00.123+02:00',
  '2026-13-45T00:00:00Z',
  '20261201T100000Z',
  'yesterday',
];

/** Every variant of `base` with one field (at `path`, or a new one) set to one of VALUES, or removed. */
function variants(base: Record<string, unknown>, paths: string[][]): Array<{ name: string; value: Record<string, unknown> }> {
  const out: Array<{ name: string; value: Record<string, unknown> }> = [];
  for (const path of paths) {
    for (const v of VALUES) {
      const value = copy(base);
      let at: Record<string, unknown> = value;
      for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>;
      const last = path[path.length - 1];
      if (v === undefined) delete at[last];
      else at[last] = copy(v);
      out.push({ name: `${path.join('.')} = ${JSON.stringify(v)}`, value });
    }
  }
  return out;
}

const postPaths = [
  ...[...Object.keys(POST), 'visibility', 'publishedAt', 'newField'].map((key) => [key]),
  ...['platform', 'accountId', 'status', 'platformPostId', 'platformPostUrl', 'publishedAt', 'errorMessage', 'errorCategory', 'other'].map((key) => [
    'platforms',
    '0',
    key,
  ]),
  ['platforms', '1'],
  ['platforms', '0', 'accountId', '_id'],
];
const accountPaths = [...[...Object.keys(ACCOUNT), 'newField'].map((key) => [key]), ['profileId', '_id']];

describe('the compiled checks of Pozy answers', () => {
  it.each([
    ['post', PozyPostDto, checkedPost, variants(POST, postPaths)],
    ['account', PozyAccountDto, checkedAccount, variants(ACCOUNT, accountPaths)],
  ] as const)('accept a %s exactly when its DTO does, and keep what the DTO keeps', (_what, cls, check, cases) => {
    let accepted = 0;
    const leftToDto: string[] = [];
    for (const { name, value } of cases) {
      const dto = byDto(cls, copy(value));
      const fast = check(copy(value));
      if (fast === undefined && dto !== 'refused') {
        leftToDto.push(name);
        continue;
      }
      // The same verdict, and when accepted, the same object (jsonb, like toEqual, ignores key order and undefined).
      expect([name, fast === undefined ? 'refused' : JSON.parse(JSON.stringify(fast))]).toEqual([name, dto]);
      if (fast !== undefined) accepted += 1;
    }
    // What the DTO accepts and the compiled check leaves to it (which then accepts it as before): only a target that
    // is an empty array, which ValidateNested walks as a list of no targets.
    expect(leftToDto).toEqual(cls === PozyPostDto ? ['platforms.1 = []'] : []);
    // Both verdicts are exercised.
    expect(accepted).toBeGreaterThan(cases.length / 4);
    expect(accepted).toBeLessThan(cases.length);
  });

  it("leaves to the DTO an answer holding a key class-transformer drops, at any depth ('__proto__', 'constructor')", () => {
    for (const key of ['__proto__', 'constructor']) {
      const nested = JSON.parse(JSON.stringify(POST).replace('"deeper"', `"${key}"`)) as object;
      expect(checkedPost(nested)).toBeUndefined();
      const top = JSON.parse(JSON.stringify(ACCOUNT).replace('"followersCount"', `"${key}"`)) as object;
      expect(checkedAccount(top)).toBeUndefined();
    }
  });
});
