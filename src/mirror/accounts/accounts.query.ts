import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
import { Prisma } from '../../generated/prisma/client';
import { decodeCursor, page } from '../cursor';
import { ListAccountsQuery } from './dto/list-accounts.query';

/** What the query endpoints answer of an account: the mirrored state, bookkeeping of the reads aside. */
const ANSWERED = {
  id: true,
  profileId: true,
  platform: true,
  username: true,
  displayName: true,
  isActive: true,
  needsReconnection: true,
  lastEventAt: true,
  syncedAt: true,
  removedAt: true,
} as const satisfies Prisma.AccountSelect;

/** A mirrored account as the query endpoints answer it. */
export type MirroredAccount = Prisma.AccountGetPayload<{ select: typeof ANSWERED }>;

const DEFAULT_LIMIT = 50;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class AccountsQuery {
  constructor(private readonly database: DatabaseService) {}

  async list(query: ListAccountsQuery): Promise<{ data: MirroredAccount[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor);
    const where: Prisma.AccountWhereInput[] = [];
    if (query.profileId !== undefined) where.push({ profileId: query.profileId });
    if (query.platform !== undefined) where.push({ platform: query.platform });
    // Connected: active and not waiting for the user to reconnect.
    if (query.connected === true) where.push({ isActive: true, needsReconnection: false });
    if (query.connected === false) where.push({ OR: [{ isActive: false }, { needsReconnection: true }] });
    if (query.includeRemoved !== true) where.push({ removedAt: null });
    if (after !== null) where.push({ id: { gt: after } });
    const rows = await this.database.prisma.account.findMany({
      select: ANSWERED,
      where: { AND: where },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    return page(rows, limit);
  }

  get(id: string): Promise<MirroredAccount | null> {
    return this.database.prisma.account.findUnique({ select: ANSWERED, where: { id } });
  }
}
