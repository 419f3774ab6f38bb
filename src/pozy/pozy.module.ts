import { NotificationsModule } from '../notifications/notifications.module';
import { Module } from '@nestjs/common';
import { BudgetRepository } from './budget/budget.repository';
import { PozyBudget } from './budget/pozy-budget.service';
import { AppConfig } from '../config/app-config';
import { PozyClients } from './pozy-clients.service';
import { PozyClock } from './pozy-clock.service';

@Module({
  // Operational events: a storm of 429s is told of (ops.budget.paused).
  imports: [NotificationsModule],
  providers: [
    BudgetRepository,
    PozyClock,
    PozyClients,
    // The environment's key's budget (what /sync/status, the status page, /metrics and DELETE /admin/pozy-budget/pause
    // show and act on), made by the same code as every key's; idle when POZY_API_KEY is unset.
    {
      provide: PozyBudget,
      inject: [PozyClients, AppConfig],
      useFactory: (clients: PozyClients, config: AppConfig) => clients.budgetOf(config.pozy.apiKey),
    },
  ],
  exports: [PozyClients, PozyBudget, PozyClock],
})
export class PozyModule {}
