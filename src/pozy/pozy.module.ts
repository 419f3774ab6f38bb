import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { BudgetRepository } from './budget/budget.repository';
import { PozyBudget } from './budget/pozy-budget.service';
import { PozyClient } from './pozy-client.service';
import { PozyClock } from './pozy-clock.service';

@Module({
  providers: [
    BudgetRepository,
    {
      provide: PozyBudget,
      inject: [BudgetRepository, AppConfig, MetricsService],
      useFactory: (repository: BudgetRepository, config: AppConfig, metrics: MetricsService) => {
        const budget = new PozyBudget(
          repository,
          {
            perWindow: config.pozy.rateLimitPerMinute,
            windowMs: config.pozy.rateLimitWindowMs,
            reserve: config.pozy.rateLimitReserve,
            maxPauseMs: config.pozy.maxPauseMs,
          },
          {
            lanes: true,
            waited: (lane, ms) => metrics.budgetWait.observe({ lane }, ms / 1000),
            paused: () => metrics.budgetPauses.inc(),
          },
        );
        return budget;
      },
    },
    PozyClient,
    PozyClock,
  ],
  exports: [PozyClient, PozyBudget, PozyClock],
})
export class PozyModule {}
