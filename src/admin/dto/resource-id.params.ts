import { Matches } from 'class-validator';

export class ResourceIdParams {
  /** Pozy ids are 24-hex ObjectIds. */
  @Matches(/^[0-9a-f]{24}$/i, { message: 'id must be a 24-character hexadecimal Pozy id' })
  id!: string;
}
