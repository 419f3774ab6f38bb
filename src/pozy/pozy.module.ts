import { Module } from '@nestjs/common';
import { BudgetRepository } from './budget/budget.repository';
import { PozyBudget } from './budget/pozy-budget.service';
import { PozyClient } from './pozy-client.service';
import { PozyClients } from './pozy-clients.service';
import { PozyClock } from './pozy-clock.service';

@Module({
  providers: [
    BudgetRepository,
    PozyClock,
    PozyClients,
    // The environment's workspace: its client, and its key's budget (what /sync/status, the status page, /metrics
    // and DELETE /admin/pozy-budget/pause show and act on), made by the same code as every workspace's.
    { provide: PozyClient, inject: [PozyClients], useFactory: (clients: PozyClients) => clients.forWorkspace(clients.defaultAccess()) },
    { provide: PozyBudget, inject: [PozyClient], useFactory: (client: PozyClient) => client.keyBudget },
  ],
  exports: [PozyClient, PozyClients, PozyBudget, PozyClock],
})
export class PozyModule {}
