import { randomBytes } from 'node:crypto';
import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiErrorResponse } from '../common/error-body.dto';
import { ReadDetail, StatusAccess, StatusDetail } from '../common/read-access';
import { StatusPageService } from './status-page.service';
import { contentSecurityPolicy } from './status-page.template';
import { STATUS_UNAVAILABLE } from '../health/status-snapshot.service';

/**
 * The operator's status page, read-only (replaying needs the admin token, pasted into the page). Public with
 * STATUS_PUBLIC=true, then without resource ids or error texts unless the request carries a read token.
 */
@ApiTags('Status page')
@Controller()
export class StatusPageController {
  constructor(private readonly page: StatusPageService) {}

  @Get()
  @StatusAccess()
  @ApiOperation({
    summary: 'The status page (HTML): sync lag, events per minute, API calls saved, backfill gaps, dead letters, subscribers.',
    description:
      "Without a token (STATUS_PUBLIC=true), or with a token made with `POST /admin/tokens` for some workspaces: the same figures, without dead letters' resources and errors, subscribers' origins, nor any error text.",
  })
  @ApiOkResponse({
    description: `A server-rendered HTML page with an inline style and script (allowed by a per-response CSP nonce); it reloads every 15 s.`,
    content: { 'text/html': { schema: { type: 'string', example: '<!doctype html><html lang="en">…</html>' } } },
  })
  @ApiErrorResponse({ internal_error: 'the database did not answer' })
  @ApiErrorResponse(STATUS_UNAVAILABLE)
  async render(@StatusDetail() detail: ReadDetail, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    // A fresh nonce per response: an injected script could not guess it.
    const nonce = randomBytes(16).toString('base64');
    const html = await this.page.page(detail, nonce);
    void reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', contentSecurityPolicy(nonce))
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store');
    return html;
  }
}
