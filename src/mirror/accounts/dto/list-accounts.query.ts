import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQuery } from '../../page.query';
import { BooleanParam } from '../../../common/query-params';

export class ListAccountsQuery extends PageQuery {
  @ApiPropertyOptional({ maxLength: 200, description: "This profile's accounts.", example: '66a9ffee00112233445566aa' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  profileId?: string;

  @ApiPropertyOptional({ maxLength: 50, description: 'Accounts on this platform.', example: 'instagram' })
  @IsOptional()
  @IsString()
  @MaxLength(50)
  platform?: string;

  /** Connected: active and not waiting for the user to reconnect. */
  @ApiPropertyOptional({
    type: Boolean,
    description: 'true: active and not waiting for the user to reconnect; false: the others.',
    example: true,
  })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  connected?: boolean;

  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Include removed accounts (with `removedAt`).', example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  includeRemoved?: boolean;
}
