import { ApiProperty } from '@nestjs/swagger';
import { PozyBudgetStatusResponse } from '../../health/dto/sync-status.response';

/** `200` of `DELETE /admin/pozy-budget/pause`. */
export class PozyBudgetResumedResponse {
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Until when the pause that was lifted would have lasted; null when the budget was not paused.',
  })
  liftedPauseUntil!: Date | null;

  @ApiProperty({ type: PozyBudgetStatusResponse, description: 'The budget now, as `/sync/status` shows it (`pausedUntil` null).' })
  pozyBudget!: PozyBudgetStatusResponse;
}
