import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { WorkspaceQuery } from '../../../common/workspace-query';
import { PageQuery } from '../../page.query';
import { BooleanParam } from '../../../common/query-params';
import { FieldsParam } from '../../whole-object';
import { ACCOUNT_FIELD_ORDER } from '../account-fields';
import { AsOfParam } from '../../history/dto/history.dto';

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

  @ApiPropertyOptional({ maxLength: 200, description: 'A part of the username or the display name, case aside.', example: 'pozy' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  q?: string;

  @ApiPropertyOptional({ type: Boolean, description: "Pozy's `enabled`.", example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  enabled?: boolean;

  @FieldsParam(ACCOUNT_FIELD_ORDER, 'account')
  fields?: string[];
}

/** `GET /accounts/:id?fields=`. */
export class AccountFieldsQuery extends WorkspaceQuery {
  @FieldsParam(ACCOUNT_FIELD_ORDER, 'account')
  fields?: string[];

  @AsOfParam('account')
  asOf?: string;
}
