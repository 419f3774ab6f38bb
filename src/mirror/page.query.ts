import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { IntParam } from './query-params';

/** `limit` and `cursor`, shared by every list endpoint of the mirror. */
export class PageQuery {
  @IsOptional()
  @IntParam()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  /** `nextCursor` of the previous page, as given. */
  @IsOptional()
  @IsString()
  cursor?: string;
}
