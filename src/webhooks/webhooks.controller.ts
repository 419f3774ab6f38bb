import { Body, Controller, Headers, HttpCode, Post } from '@nestjs/common';
import { WebhookReceipt, WebhooksService } from './webhooks.service';

export const POZY_WEBHOOK_PATH = '/webhooks/pozy';

@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  /** The body arrives unparsed (see http/body-parser.ts): the signature is checked over these exact bytes. */
  @Post('pozy')
  @HttpCode(200)
  receive(
    @Body() rawBody: Buffer | undefined,
    @Headers() headers: Record<string, string | string[] | undefined>,
  ): Promise<WebhookReceipt> {
    return this.webhooks.receive(Buffer.isBuffer(rawBody) ? rawBody : Buffer.alloc(0), headers);
  }
}
