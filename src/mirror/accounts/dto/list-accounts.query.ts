import { IsBoolean, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { BooleanParam, IntParam } from '../../query-params';

export class ListAccountsQuery {
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

  @IsOptional()
  @IntParam()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @IsOptional()
  @IsString()
  cursor?: string;
}
