import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiError } from '../../common/api-error';
import { AccountsQuery, MirroredAccount } from './accounts.query';
import { ListAccountsQuery } from './dto/list-accounts.query';

@Controller('accounts')
export class AccountsController {
  constructor(private readonly accounts: AccountsQuery) {}

  @Get()
  list(@Query() query: ListAccountsQuery): Promise<{ data: MirroredAccount[]; nextCursor: string | null }> {
    return this.accounts.list(query);
  }

  /** A removed account is still answered (with `removedAt`); 404 means the mirror never saw it. */
  @Get(':id')
  async get(@Param('id') id: string): Promise<MirroredAccount> {
    const account = await this.accounts.get(id);
    if (!account) throw new ApiError(404, 'not_found', `Account ${id} is not in the mirror`);
    return account;
  }
}
