import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
import { decodeCursor, page } from '../cursor';
import { ListPostsQuery } from './dto/list-posts.query';

/** A mirrored post as the query endpoints answer it. */
export interface MirroredPost {
  id: string;
  status: string;
  content: string | null;
  scheduledFor: Date | null;
  publishedAt: Date | null;
  platforms: unknown[];
  profileIds: string[];
  pozyCreatedAt: Date | null;
  pozyUpdatedAt: Date | null;
  lastEventAt: Date | null;
  syncedAt: Date;
  deletedAt: Date | null;
}

// profileIds come from the mirrored accounts of the post's targets (Pozy's post has no profile field).
const SELECT_POSTS = `
SELECT p.id, p.status, p.content, p.scheduled_for AS "scheduledFor", p.published_at AS "publishedAt", p.platforms,
       ARRAY(SELECT DISTINCT a.profile_id FROM account a WHERE a.id = ANY(p.account_ids) ORDER BY 1) AS "profileIds",
       p.pozy_created_at AS "pozyCreatedAt", p.pozy_updated_at AS "pozyUpdatedAt", p.last_event_at AS "lastEventAt",
       p.synced_at AS "syncedAt", p.deleted_at AS "deletedAt"
  FROM post p`;

const DEFAULT_LIMIT = 50;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class PostsQuery {
  constructor(private readonly database: DatabaseService) {}

  async list(query: ListPostsQuery): Promise<{ data: MirroredPost[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const { rows } = await this.database.pool.query<MirroredPost>(
      `${SELECT_POSTS}
        WHERE ($1::text IS NULL OR p.status = $1)
          AND ($2::text IS NULL OR p.platform_names @> ARRAY[$2::text])
          AND ($3::text IS NULL OR p.account_ids @> ARRAY[$3::text])
          AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM account a WHERE a.id = ANY(p.account_ids) AND a.profile_id = $4))
          AND ($5::timestamptz IS NULL OR greatest(p.pozy_updated_at, p.deleted_at) >= $5)
          AND ($6::boolean OR p.deleted_at IS NULL)
          AND (NOT $9::boolean OR p.deleted_at IS NOT NULL)
          AND ($7::text IS NULL OR p.id > $7)
        ORDER BY p.id
        LIMIT $8`,
      [
        query.status === 'deleted' ? null : (query.status ?? null),
        query.platform ?? null,
        query.accountId ?? null,
        query.profileId ?? null,
        query.updatedSince ?? null,
        query.includeDeleted === true || query.status === 'deleted',
        decodeCursor(query.cursor),
        limit + 1,
        // `deleted` is not a Pozy status: it asks for the posts Pozy answers 404 for.
        query.status === 'deleted',
      ],
    );
    return page(rows, limit);
  }

  async get(id: string): Promise<MirroredPost | undefined> {
    const { rows } = await this.database.pool.query<MirroredPost>(`${SELECT_POSTS} WHERE p.id = $1`, [id]);
    return rows[0];
  }
}
