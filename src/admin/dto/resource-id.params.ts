import { ApiProperty } from '@nestjs/swagger';
import { Matches } from 'class-validator';

export class ResourceIdParams {
  /**
   * Pozy ids are ObjectIds: 24 lower-case hex digits. Another case is refused, not folded: Pozy would not know it,
   * and the read it asks for would only end in the dead-letter queue.
   */
  @ApiProperty({
    description: 'A Pozy id (24 lower-case hexadecimal digits): the post, or the profile.',
    pattern: '^[0-9a-f]{24}$',
    example: '66aa01f3c2b1e4d5f6a7b8c9',
  })
  @Matches(/^[0-9a-f]{24}$/, { message: 'id must be a Pozy id: 24 lower-case hexadecimal digits' })
  id!: string;
}
