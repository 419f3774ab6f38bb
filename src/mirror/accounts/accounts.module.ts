import { Module } from '@nestjs/common';
import { AccountMirrorRepository } from './account-mirror.repository';
import { AccountsController } from './accounts.controller';
import { AccountsQuery } from './accounts.query';

@Module({
  controllers: [AccountsController],
  providers: [AccountMirrorRepository, AccountsQuery],
  exports: [AccountMirrorRepository],
})
export class AccountsModule {}
