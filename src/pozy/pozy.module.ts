import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { BudgetRepository } from './budget/budget.repository';
import { PozyBudget } from './budget/pozy-budget.service';
import { PozyClient } from './pozy-client.service';

@Module({
  providers: [
    BudgetRepository,
    {
      provide: PozyBudget,
      inject: [BudgetRepository, AppConfig, MetricsService],
      useFactory: (repository: BudgetRepository, config: AppConfig, metrics: MetricsService) =>
        new PozyBudget(
          repository,
          { perWindow: config.pozy.rateLimitPerMinute, windowMs: config.pozy.rateLimitWindowMs, reserve: config.pozy.rateLimitReserve },
          {
            lanes: true,
            waited: (lane, ms) => metrics.budgetWait.observe({ lane }, ms / 1000),
            paused: () => metrics.budgetPauses.inc(),
          },
        ),
    },
    PozyClient,
  ],
  exports: [PozyClient, BudgetRepository],
})
export class PozyModule {}
