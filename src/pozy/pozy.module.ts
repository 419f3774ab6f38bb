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
        metrics.publishGauge(
          'pozy_sync_pozy_budget_requests',
          "The deployment's Pozy budget per window: limit (POZY_RATE_LIMIT_PER_MINUTE), effective (less others' use and their reserve), used (by every replica, in the window just ended), others (another client of the key, from Pozy's headers)",
          ['figure'],
          async (gauge) => {
            const status = await budget.status();
            gauge.set({ figure: 'limit' }, status.limit);
            gauge.set({ figure: 'effective' }, status.effectiveLimit);
            gauge.set({ figure: 'used' }, status.usedInWindow);
            gauge.set({ figure: 'others' }, status.pozy?.othersUsing ?? 0);
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
