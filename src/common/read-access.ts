import { applyDecorators, CanActivate, createParamDecorator, ExecutionContext, Injectable, Logger, OnModuleInit, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error';
import { bearerToken, matchesAnyToken } from './bearer-token';
import { AppConfig } from '../config/app-config';
import { ApiReadAuth, ApiStatusAuth } from '../http/openapi';

/** What a reader may see of the status: everything, or (anonymous, STATUS_PUBLIC=true) no ids and no error texts. */
export type ReadDetail = 'full' | 'public';

/**
 * The read rule: with API_TOKENS unset everyone reads everything (today's open reads); otherwise a request needs
 * one of API_TOKENS or ADMIN_TOKEN, except that `anonymous: 'public'` lets one without a token see the public detail.
 */
function readDetail(config: AppConfig, request: FastifyRequest, anonymous: 'refuse' | 'public'): ReadDetail {
  if (config.readTokens.length === 0) return 'full';
  const presented = bearerToken(request);
  if (!presented) {
    if (anonymous === 'public') return 'public';
    throw new ApiError(401, 'missing_token', 'Authorization: Bearer <token> is required: one of API_TOKENS, or ADMIN_TOKEN');
  }
  const tokens = config.adminToken ? [...config.readTokens, config.adminToken] : config.readTokens;
  // A wrong token is refused even where anonymous requests pass: its client should learn it was rotated away.
  if (!matchesAnyToken(presented, tokens)) throw new ApiError(403, 'invalid_token', 'The token is not one of API_TOKENS, nor ADMIN_TOKEN');
  return 'full';
}

/** The query endpoints: 401 `missing_token` without a token, 403 `invalid_token` with a wrong one; open without API_TOKENS. */
@Injectable()
export class ReadTokenGuard implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    readDetail(this.config, context.switchToHttp().getRequest<FastifyRequest>(), 'refuse');
    return true;
  }
}

// Each request's detail, from the guard to the handler (@StatusDetail()); gone with the request.
const details = new WeakMap<FastifyRequest, ReadDetail>();

/** The status endpoints: like ReadTokenGuard, but with STATUS_PUBLIC=true a request without a token gets the public detail. */
@Injectable()
export class StatusAccessGuard implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    details.set(request, readDetail(this.config, request, this.config.statusPublic ? 'public' : 'refuse'));
    return true;
  }
}

/** On a handler under @StatusAccess(): the detail its reader may see (public when in any doubt). */
export const StatusDetail = createParamDecorator(
  (_data: unknown, context: ExecutionContext): ReadDetail => details.get(context.switchToHttp().getRequest<FastifyRequest>()) ?? 'public',
);

/** Guards a controller or route as the mirror's query endpoints are guarded, and documents its bearer scheme. */
export const ReadAccess = (): MethodDecorator & ClassDecorator => applyDecorators(UseGuards(ReadTokenGuard), ApiReadAuth());

/** Guards a status endpoint (STATUS_PUBLIC decides about anonymous requests); its handler reads @StatusDetail(). */
export const StatusAccess = (): MethodDecorator & ClassDecorator => applyDecorators(UseGuards(StatusAccessGuard), ApiStatusAuth());

/** Says once at boot that the query endpoints are open, as the receiver says it about unsigned webhooks. */
@Injectable()
export class OpenReadsWarning implements OnModuleInit {
  private readonly logger = new Logger(OpenReadsWarning.name);

  constructor(private readonly config: AppConfig) {}

  onModuleInit(): void {
    if (!this.config.servesHttp || this.config.readTokens.length > 0) return;
    const what = 'the query endpoints (/posts, /accounts, /changes) and the full status are open to anyone who can reach this port';
    this.logger.warn(
      this.config.openReadsChosen
        ? `API_TOKENS=none: ${what}, as chosen.`
        : `API_TOKENS is not set: ${what}. Set API_TOKENS to require a token (or API_TOKENS=none to say you mean it).`,
    );
  }
}
