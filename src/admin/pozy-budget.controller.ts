import { Controller, Delete, HttpCode, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiAdminAuth } from '../http/openapi';
import { BudgetStatus, PozyBudget } from '../pozy/budget/pozy-budget.service';
import { PozyBudgetResumedResponse } from './dto/pozy-budget.response';
import { ReconcileSignal } from '../receive/reconcile-signal';
import { ReconcileRequestRepository } from '../reconcile/reconcile-request.repository';
import { WorkspaceRegistry } from '../workspaces/workspace-registry.service';

@ApiTags('Admin: Pozy budget')
@ApiAdminAuth()
@Controller('admin/pozy-budget')
@UseGuards(AdminTokenGuard)
export class PozyBudgetController {
  constructor(
    private readonly budget: PozyBudget,
    private readonly workspaces: WorkspaceRegistry,
    private readonly requests: ReconcileRequestRepository,
    private readonly reconcileSignal: ReconcileSignal,
  ) {}

  /**
   * Lifts the pause a 429 (or headers saying Pozy's window is spent) put on the shared budget: every replica sends
   * again within a second. Safe to repeat; a budget not paused answers the same with `liftedPauseUntil: null`.
   */
  @Delete('pause')
  @HttpCode(200)
  @ApiOperation({ summary: "Lift the shared Pozy budget's pause, for every replica." })
  @ApiOkResponse({ type: PozyBudgetResumedResponse })
  async resume(): Promise<{ liftedPauseUntil: Date | null; pozyBudget: BudgetStatus }> {
    const { lifted, status } = await this.budget.resume();
    // The reads the pause postponed (until its end) are due now, for every workspace on this key.
    const onKey = this.workspaces
      .all()
      .filter((workspace) => workspace.client.keyBudget === this.budget)
      .map((workspace) => workspace.id);
    if (lifted && (await this.requests.advancePostponed(onKey)) > 0) this.reconcileSignal.requested(new Date());
    return { liftedPauseUntil: lifted, pozyBudget: status };
  }
}
