import { applyDecorators, Body, Controller, Headers, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';
import { ApiErrorResponse } from '../common/error-body.dto';
import { PozyEventEnvelopeDto } from '../receive/dto/pozy-event.dto';
import { WebhookReceiptResponse } from './dto/webhook-receipt.response';
import { WebhookReceipt } from '../receive/event-receiver';
import { WebhooksService } from './webhooks.service';

export const POZY_WEBHOOK_PATH = '/webhooks/pozy';
/** The same, per workspace (the route as Fastify names it). */
export const POZY_WORKSPACE_WEBHOOK_PATH = `${POZY_WEBHOOK_PATH}/:workspace`;
/** Both receive routes: their bodies stay bytes, and they are counted as Pozy's deliveries. */
export const POZY_WEBHOOK_ROUTES: readonly string[] = [POZY_WEBHOOK_PATH, POZY_WORKSPACE_WEBHOOK_PATH];

@ApiTags('Webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  /** The body arrives unparsed (see http/body-parser.ts): the signature is checked over these exact bytes. */
  @Post('pozy')
  @ReceiveDocs()
  receive(@Body() rawBody: Buffer | undefined, @Headers() headers: RawHeaders): Promise<WebhookReceipt> {
    return this.webhooks.receive(DEFAULT_WORKSPACE, bodyBytes(rawBody), headers, POZY_WEBHOOK_PATH);
  }

  /** A workspace's own path; `default`'s is the same as the one above. */
  @Post('pozy/:workspace')
  @ReceiveDocs()
  @ApiParam({ name: 'workspace', description: 'The workspace the delivery is for (`default`: the path above).', example: DEFAULT_WORKSPACE })
  @ApiErrorResponse({ unknown_workspace: 'no such workspace is mirrored here; nothing is stored' })
  receiveFor(@Param('workspace') workspace: string, @Body() rawBody: Buffer | undefined, @Headers() headers: RawHeaders): Promise<WebhookReceipt> {
    return this.webhooks.receive(workspace, bodyBytes(rawBody), headers, POZY_WORKSPACE_WEBHOOK_PATH);
  }
}

type RawHeaders = Record<string, string | string[] | undefined>;

const bodyBytes = (rawBody: Buffer | undefined) => (Buffer.isBuffer(rawBody) ? rawBody : Buffer.alloc(0));

/** What both receive paths answer. */
function ReceiveDocs() {
  return applyDecorators(
    HttpCode(200),
    ApiOperation({
      summary: 'Receive one Pozy webhook delivery; answered once the event is committed.',
      description:
        'The signature is checked over the raw bytes of the body before anything parses it. Test events and unknown event ' +
        'types are stored (flagged) and change nothing. Every refusal stores nothing.',
    }),
    ApiConsumes('application/json'),
    ApiBody({ type: PozyEventEnvelopeDto, description: 'The Pozy event envelope, at most 1 MiB; unknown fields are stored as sent.' }),
    ApiHeader({
      name: 'X-Pozy-Signature',
      required: false,
      description:
        'Hex HMAC-SHA256 of the raw body with POZY_WEBHOOK_SECRET (Pozy sends lower case; either case is read). Required when that secret is set.',
      schema: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' },
    }),
    ApiHeader({
      name: 'X-Pozy-Event-Id',
      required: true,
      description: "The event's id: must equal the body's `id`.",
      schema: { type: 'string', maxLength: 200 },
    }),
    ApiHeader({
      name: 'X-Pozy-Attempt',
      required: false,
      description: 'The delivery attempt: a positive integer.',
      schema: { type: 'string', pattern: '^[1-9][0-9]{0,3}$', example: '1' },
    }),
    ApiHeader({
      name: 'X-Pozy-Delivery-Id',
      required: false,
      description: 'The delivery id, stored with the event.',
      schema: { type: 'string', maxLength: 200 },
    }),
    ApiOkResponse({ type: WebhookReceiptResponse, description: 'Stored (or a duplicate, or safe in the local spool).' }),
    ApiErrorResponse({
      invalid_encoding: 'the body is not UTF-8, or starts with a byte order mark (`details` says at which byte)',
      malformed_json: 'not JSON',
      invalid_event:
        'not an object, or lacks `id`, `event`, an ISO 8601 `timestamp` with a zone, `post.id` (post events) or ' +
        '`account.accountId`/`profileId` (account events); a `timestamp` more than EVENT_MAX_FUTURE_MS ahead, or older than EVENT_RETENTION_DAYS less one day; text PostgreSQL cannot store ' +
        '(\\u0000, an unpaired surrogate), a number past its `numeric`, or nesting deeper than 100 (`details` names the field)',
      invalid_headers: 'X-Pozy-Event-Id missing or X-Pozy-Attempt not a positive integer',
      event_id_mismatch: "X-Pozy-Event-Id differs from the body's `id`",
    }),
    ApiErrorResponse({
      missing_signature: 'the secret is set and X-Pozy-Signature is absent',
      invalid_signature: 'the secret is set and X-Pozy-Signature does not match the raw body',
    }),
    ApiErrorResponse({ payload_too_large: 'a body over 1 MiB' }),
    ApiErrorResponse({ unsupported_media_type: 'not `application/json`' }),
    ApiErrorResponse({ overloaded: 'too many webhooks waiting for the database; retry later' }),
  );
}
