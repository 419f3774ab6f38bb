import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** `200` of `POST /webhooks/pozy`: answered only once the event is committed (or safe in the local spool). */
export class WebhookReceiptResponse {
  @ApiProperty({ type: Boolean, enum: [true], example: true })
  received!: true;

  @ApiProperty({ description: "The event's id.", example: 'evt_01J8Z6W2C5' })
  eventId!: string;

  @ApiProperty({ description: 'True when this event id was already stored: nothing was done again.', example: false })
  duplicate!: boolean;

  @ApiPropertyOptional({
    type: Boolean,
    enum: [true],
    description: "Present when the database did not acknowledge in time: the event is safe in this replica's spool.",
  })
  spooled?: true;

  @ApiPropertyOptional({ type: Boolean, enum: [true], description: "Present for Pozy's test events: stored, flagged, and nothing else." })
  test?: true;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The resource this new event asks to read again (`post:<id>`, `profile:<id>`); null for duplicates, tests, unknown types.',
    example: 'post:66aa01f3c2b1e4d5f6a7b8c9',
  })
  reconcile!: string | null;
}
