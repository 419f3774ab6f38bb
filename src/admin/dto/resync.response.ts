import { ApiProperty } from '@nestjs/swagger';

/** `202` of `POST /admin/resync/...`: the read is queued, due now. */
export class ResyncAcceptedResponse {
  @ApiProperty({ type: Boolean, enum: [true], example: true })
  accepted!: true;

  @ApiProperty({ description: 'The job key the read runs under: `post:<id>` or `profile:<id>`.', example: 'post:66aa01f3c2b1e4d5f6a7b8c9' })
  reconcile!: string;
}
