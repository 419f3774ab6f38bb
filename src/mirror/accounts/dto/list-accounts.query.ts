import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQuery } from '../../page.query';
import { BooleanParam } from '../../query-params';

export class ListAccountsQuery extends PageQuery {
  @IsOptional()
  @IsString()
  @MaxLength(200)
  profileId?: string;

  @IsOptional()
  @IsString()
  @MaxLength(50)
  platform?: string;

  /** Connected: active and not waiting for the user to reconnect. */
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  connected?: boolean;

  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  includeRemoved?: boolean;
}
