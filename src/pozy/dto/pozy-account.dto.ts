import { Transform } from 'class-transformer';
import { IsBoolean, IsNotEmpty, IsOptional, IsString } from 'class-validator';
import { populatedId } from './populated-id';

/** A SocialAccount as `GET /v1/accounts?profileId=` lists it. */
export class PozyAccountDto {
  @IsString()
  @IsNotEmpty()
  _id!: string;

  @IsString()
  @IsNotEmpty()
  platform!: string;

  @Transform(populatedId)
  @IsString()
  @IsNotEmpty()
  profileId!: string;

  @IsOptional()
  @IsString()
  username?: string;

  @IsOptional()
  @IsString()
  displayName?: string;

  @IsBoolean()
  isActive!: boolean;

  @IsOptional()
  @IsBoolean()
  needsReconnection?: boolean;
}
