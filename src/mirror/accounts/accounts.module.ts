import { Module } from '@nestjs/common';
import { NotificationsModule } from '../../notifications/notifications.module';
import { AccountMirrorRepository } from './account-mirror.repository';
import { AccountsController } from './accounts.controller';
import { AccountsQuery } from './accounts.query';

@Module({
  imports: [NotificationsModule],
  controllers: [AccountsController],
  providers: [AccountMirrorRepository, AccountsQuery],
  exports: [AccountMirrorRepository],
})
export class AccountsModule {}
