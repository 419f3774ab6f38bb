import { Expression, Insertable, RawBuilder, Selectable, sql } from 'kysely';
import type { Db } from '../../database/database.service';
import { isoText } from '../../database/sql-expressions';
import type { DB } from '../../generated/kysely/database';
import { PozyPostDto } from '../../pozy/dto/pozy-post.dto';
import { extraFields, FieldOrder, WholeObject } from '../whole-object';

/**
 * The whole post. The mirror keeps every field of Pozy's answer: those that filters, guards and orders need in
 * columns of their own, everything else (fields pozy-sync does not know yet included) in `extra`. A mirrored post is
 * answered under Pozy's names, except `id` for `_id` and `accountId` (always the plain id), with the mirror's own
 * fields after them.
 */

/** Pozy's fields as the mirror answers them, in the order it answers them (fields Pozy adds later follow these). */
export const POZY_POST_FIELDS = [
  'id',
  'userId',
  'title',
  'content',
  'status',
  'scheduledFor',
  'timezone',
  'publishedAt',
  'platforms',
  'mediaItems',
  'tags',
  'hashtags',
  'mentions',
  'visibility',
  'metadata',
  'recycling',
  'recycledFromPostId',
  'queuedFromProfile',
  'queueId',
  'createdAt',
  'updatedAt',
] as const;

/** The mirror's own fields, after Pozy's. */
export const MIRROR_POST_FIELDS = [
  'workspaceId',
  'profileIds',
  'pozyCreatedAt',
  'pozyUpdatedAt',
  'lastEventAt',
  'syncedAt',
  'deletedAt',
  'sequence',
] as const;

export const POST_FIELD_ORDER: FieldOrder = { pozy: POZY_POST_FIELDS, mirror: MIRROR_POST_FIELDS };

/** The columns of a post that a read of Pozy gives. */
export type PostColumns = Required<
  Pick<
    Insertable<DB['post']>,
    | 'id'
    | 'status'
    | 'title'
    | 'content'
    | 'scheduled_for'
    | 'published_at'
    | 'platforms'
    | 'tags'
    | 'hashtags'
    | 'visibility'
    | 'extra'
    | 'account_ids'
    | 'platform_names'
    | 'error_categories'
    | 'has_media'
    | 'pozy_created_at'
    | 'pozy_updated_at'
  >
>;

// Held in columns of their own, checked by PozyPostDto (or, for `_id` and `id`, the post's key).
const IN_COLUMNS = new Set(['_id', 'id', 'status', 'content', 'scheduledFor', 'publishedAt', 'platforms', 'createdAt', 'updatedAt']);

const isText = (value: unknown): value is string => typeof value === 'string';
const isTextList = (value: unknown): value is string[] => Array.isArray(value) && value.every(isText);

/**
 * A post of Pozy's as the mirror's columns. Lenient beyond what the mirror relies on: a field that is not of the type
 * its column holds (a numeric title, say) is kept as Pozy sent it in `extra`, and the column stays empty.
 */
export function postColumns(post: PozyPostDto): PostColumns {
  const fields = post as unknown as Record<string, unknown>;
  const extra = extraFields(post, IN_COLUMNS);
  const promoted = <T>(key: string, fits: (value: unknown) => value is T): T | null => {
    const value = fields[key];
    if (!fits(value)) return null;
    delete extra[key];
    return value;
  };
  const platforms = post.platforms.map((target) => ({ ...target }));
  const { mediaItems } = fields;
  return {
    id: post._id,
    status: post.status,
    title: promoted('title', isText),
    content: post.content ?? null,
    scheduled_for: post.scheduledFor ?? null,
    published_at: post.publishedAt ?? null,
    platforms,
    tags: promoted('tags', isTextList) ?? [],
    hashtags: promoted('hashtags', isTextList) ?? [],
    visibility: promoted('visibility', isText),
    extra,
    account_ids: [...new Set(platforms.map((p) => p.accountId))],
    platform_names: [...new Set(platforms.map((p) => p.platform))],
    error_categories: [...new Set(platforms.map((p) => (p as { errorCategory?: unknown }).errorCategory).filter(isText))],
    has_media: Array.isArray(mediaItems) && mediaItems.length > 0,
    pozy_created_at: post.createdAt,
    pozy_updated_at: post.updatedAt,
  };
}

type PostRow = Selectable<DB['post']>;

/** A column of `alias` (the post table, or a CTE of its rows): the name is checked against the schema. */
const column = <C extends keyof PostRow>(alias: string, name: C) => sql.ref<PostRow[C]>(`${alias}.${name}`);

/**
 * The post as the mirror answers it, built by PostgreSQL from the row `alias` names: as JSON text (wholeObjectText),
 * stored with each row when it is written (post-answer.ts) and sent by the query endpoints, and read as jsonb by the
 * feed and notifications; with `fields`, built at read time. `profileIds` comes from the accounts (see profilesOf);
 * timestamps are written as JavaScript's toISOString writes them.
 */
export function wholePost(alias: string, profileIds?: RawBuilder<unknown>): WholeObject {
  const c = <C extends keyof PostRow>(name: C) => column(alias, name);
  const pozy = {
    id: c('id'),
    title: c('title'),
    content: c('content'),
    status: c('status'),
    scheduledFor: isoText(c('scheduled_for')),
    publishedAt: isoText(c('published_at')),
    platforms: c('platforms'),
    tags: sql`to_jsonb(${c('tags')})`,
    hashtags: sql`to_jsonb(${c('hashtags')})`,
    visibility: c('visibility'),
    createdAt: isoText(c('pozy_created_at')),
    updatedAt: isoText(c('pozy_updated_at')),
  };
  const mirror = {
    workspaceId: c('workspace_id'),
    ...(profileIds ? { profileIds } : {}),
    pozyCreatedAt: isoText(c('pozy_created_at')),
    pozyUpdatedAt: isoText(c('pozy_updated_at')),
    lastEventAt: isoText(c('last_event_at')),
    syncedAt: isoText(c('synced_at')),
    deletedAt: isoText(c('deleted_at')),
    sequence: c('sequence'),
  };
  return { pozy, extra: c('extra'), mirror };
}

/**
 * A post's profiles (Pozy's post has no profile field): those of its own workspace's mirrored accounts among its
 * targets, distinct, in the order PostgreSQL sorts them; each account found by its key. The query endpoints answer
 * this as `profileIds`; the feed's entries keep it. Each target is a lookup of its own (LATERAL, LIMIT 1: the key is
 * unique; a literal, as the whole answer is compiled once without parameters): a join gets planned as a hash of all
 * the workspace's accounts, built again for every post.
 */
export function profilesOf(db: Db, workspaceId: Expression<string>, accountIds: Expression<string[]>) {
  return db
    .selectFrom(sql<{ id: string }>`unnest(${accountIds})`.as<'u'>(sql`u(id)`))
    .innerJoinLateral(
      (eb) =>
        eb
          .selectFrom('account')
          .select('account.profile_id')
          .whereRef('account.id', '=', 'u.id')
          .where('account.workspace_id', '=', workspaceId)
          .limit(sql.lit(1))
          .as('a'),
      (join) => join.onTrue(),
    )
    .select((eb) =>
      eb.fn.coalesce(eb.fn.agg<string[]>('array_agg', ['a.profile_id']).distinct().orderBy('a.profile_id'), sql<string[]>`'{}'`).as('ids'),
    );
}
