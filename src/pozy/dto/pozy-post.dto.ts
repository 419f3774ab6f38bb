import { Transform, Type } from 'class-transformer';
import { IsArray, IsISO8601, IsNotEmpty, IsOptional, IsString, ValidateNested } from 'class-validator';
import { populatedId } from './populated-id';

/** One target of a post (Pozy's PlatformTarget): only the fields the mirror keeps are checked. */
export class PozyPlatformTargetDto {
  @IsString()
  @IsNotEmpty()
  platform!: string;

  @Transform(populatedId)
  @IsString()
  @IsNotEmpty()
  accountId!: string;

  @IsString()
  @IsNotEmpty()
  status!: string;

  @IsOptional()
  @IsString()
  platformPostId?: string;

  @IsOptional()
  @IsString()
  platformPostUrl?: string | null;

  @IsOptional()
  @IsISO8601()
  publishedAt?: string;

  @IsOptional()
  @IsString()
  errorMessage?: string;
}

/** A post as `GET /v1/posts/{id}` returns it. A malformed answer is an error, never a corrupted row. */
export class PozyPostDto {
  @IsString()
  @IsNotEmpty()
  _id!: string;

  @IsString()
  @IsNotEmpty()
  status!: string;

  @IsOptional()
  @IsString()
  content?: string;

  @IsOptional()
  @IsISO8601()
  scheduledFor?: string;

  @IsOptional()
  @IsISO8601()
  publishedAt?: string;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => PozyPlatformTargetDto)
  platforms!: PozyPlatformTargetDto[];

  @IsISO8601()
  createdAt!: string;

  @IsISO8601()
  updatedAt!: string;
}
