import { ApiProperty } from '@nestjs/swagger';
import { Matches } from 'class-validator';

export class ResourceIdParams {
  /** Pozy ids are 24-hex ObjectIds. */
  @ApiProperty({
    description: 'A Pozy id (24 hexadecimal digits): the post, or the profile.',
    pattern: '^[0-9a-fA-F]{24}$',
    example: '66aa01f3c2b1e4d5f6a7b8c9',
  })
  @Matches(/^[0-9a-f]{24}$/i, { message: 'id must be a 24-character hexadecimal Pozy id' })
  id!: string;
}
