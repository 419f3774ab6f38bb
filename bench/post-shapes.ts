import { POST_SORTS } from '../src/mirror/posts/post-sort';

/**
 * Random shapes of GET /posts drawn from a seed: any combination of filters, an order, a limit, and whether to read the
 * second page too. The query bench measures them, and test/post-query-plans.e2e-spec.ts bounds what each reads, so
 * that no shape is fast because someone named it.
 */

/** The values a mirror holds, common and rare alike, for the filters to ask about. */
export interface ShapeVocabulary {
  statuses: string[];
  platforms: string[];
  accounts: string[];
  profiles: string[];
  errorCategories: string[];
  visibilities: string[];
  tags: string[];
  hashtags: string[];
  /** Words of titles and contents, common and rare, and some no post holds. */
  words: string[];
  /** An instant within the mirror's dates, for the date filters. */
  around: Date;
}

export interface PostShape {
  /** The query string, without `cursor`. */
  query: Record<string, string | string[]>;
  limit: number;
  /** Whether the second page (the first's cursor) is read too. */
  secondPage: boolean;
}

/** mulberry32: a small seeded generator, so a failing shape is drawn again by its seed. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` shapes from `seed`: each filter present with its own chance, at least one filter or a non-default order. */
export function drawShapes(vocabulary: ShapeVocabulary, count: number, seed: number): PostShape[] {
  const random = seeded(seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)];
  const some = (values: readonly string[], most: number) => [...new Set(Array.from({ length: 1 + Math.floor(random() * most) }, () => pick(values)))];
  const day = 24 * 3600 * 1000;
  const shapes: PostShape[] = [];
  while (shapes.length < count) {
    const query: PostShape['query'] = {};
    if (random() < 0.35) query.status = pick(vocabulary.statuses);
    if (random() < 0.3) query.platform = pick(vocabulary.platforms);
    if (random() < 0.15) query.accountId = pick(vocabulary.accounts);
    if (random() < 0.1) query.profileId = pick(vocabulary.profiles);
    if (random() < 0.15) query.errorCategory = pick(vocabulary.errorCategories);
    if (random() < 0.2) query.visibility = pick(vocabulary.visibilities);
    if (random() < 0.2) query.hasMedia = String(random() < 0.5);
    if (random() < 0.2) query.tag = some(vocabulary.tags, 2);
    if (random() < 0.2) query.hashtag = some(vocabulary.hashtags, 2);
    if (random() < 0.25) query.q = some(vocabulary.words, 2).join(' ');
    if (random() < 0.08) query.updatedSince = new Date(vocabulary.around.getTime() - random() * 60 * day).toISOString();
    if (random() < 0.08) {
      const from = vocabulary.around.getTime() + (random() - 0.5) * 60 * day;
      query.scheduledFrom = new Date(from).toISOString();
      query.scheduledTo = new Date(from + random() * 10 * day).toISOString();
    }
    if (random() < 0.05) query.includeDeleted = 'true';
    if (random() < 0.7) query.sort = pick(POST_SORTS);
    if (Object.keys(query).length === 0) continue;
    shapes.push({ query, limit: pick([10, 20, 50, 50, 100]), secondPage: random() < 0.35 });
  }
  return shapes;
}

/** The shape as a query string (`cursor` appended when given). */
export function shapePath(shape: PostShape, cursor?: string): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(shape.query)) {
    for (const one of Array.isArray(value) ? value : [value]) params.append(name, one);
  }
  params.set('limit', String(shape.limit));
  if (cursor !== undefined) params.set('cursor', cursor);
  return `/posts?${params.toString()}`;
}
