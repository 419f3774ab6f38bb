import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  Injectable,
  Logger,
  OnModuleInit,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error';
import { bearerToken, matchesAnyDigest, tokenDigests } from './bearer-token';
import { WorkspaceScope } from './read-scope';
import { AppConfig } from '../config/app-config';
import { ApiReadAuth, ApiStatusAuth } from '../http/openapi';

/** What a reader may see of the status: everything, or (anonymous, STATUS_PUBLIC=true) no ids and no error texts. */
export type ReadDetail = 'full' | 'public';

/** A live token made with `POST /admin/tokens`, as the registry knows it. */
export interface IssuedToken {
  readonly id: string;
  readonly scope: WorkspaceScope;
  /** When set: the token reads only GET /changes?consumer= for these named consumers, and commits them. */
  readonly consumers?: readonly string[];
}

/**
 * The tokens made through the admin API, as the read guards ask about them. Implemented (and provided to every
 * module) by read-tokens/, a higher layer, from a copy in memory: a guard's check costs no database statement.
 */
export abstract class IssuedReadTokens {
  /** Whether any is live: then the reads are not open, even with API_TOKENS unset or `none`. */
  abstract get anyLive(): boolean;

  /** The live token `presented` is, if any; throws a 503 ApiError while the copy is too old to tell a deleted one. */
  abstract match(presented: string): IssuedToken | undefined;
}

/**
 * A copy of the tokens made through the API not confirmed for this long may still hold one deleted meanwhile: they
 * are then answered 503 rather than trusted, until the database answers again (API_TOKENS and ADMIN_TOKEN still read).
 */
export const TOKENS_STALE_AFTER_MS = 10_000;

/** That 503, for the OpenAPI descriptions of the read endpoints' 503s. */
export const TOKENS_UNAVAILABLE = {
  tokens_unavailable:
    'a token not in the environment came while the tokens made with `POST /admin/tokens` ' +
    `could not be read from the database for ${TOKENS_STALE_AFTER_MS / 1000} s; with \`Retry-After\``,
} as const;

/** Who is reading: what of the status they may see, and which workspaces they may read. */
interface Reader {
  readonly detail: ReadDetail;
  readonly scope: WorkspaceScope;
  /** A token limited to named consumers: only these. */
  readonly consumers?: readonly string[];
}

const EVERYTHING: Reader = Object.freeze({ detail: 'full', scope: WorkspaceScope.ALL });
const ANONYMOUS_STATUS: Reader = Object.freeze({ detail: 'public', scope: WorkspaceScope.ALL });

/** Whether anyone may read without a token: API_TOKENS unset (or `none`), and no token made through the API live. */
export const readsOpen = (config: AppConfig, issued: IssuedReadTokens): boolean => config.readTokens.length === 0 && !issued.anyLive;

/**
 * The tokens a reader may present, for the refusals: without a live token made through the API, the wording is what
 * it was before them ("one of API_TOKENS, or ADMIN_TOKEN").
 */
function accepted(config: AppConfig, issued: IssuedReadTokens): { oneOf: string; notOneOf: string } {
  const others = [
    ...(config.readTokens.length > 0 ? ['one of API_TOKENS'] : []),
    ...(issued.anyLive ? ['a live token made with POST /admin/tokens'] : []),
  ];
  return { oneOf: `${others.join(', ')}, or ADMIN_TOKEN`, notOneOf: `not ${others.join(', nor ')}, nor ADMIN_TOKEN` };
}

// The digests of API_TOKENS and ADMIN_TOKEN, the tokens that read everything: the configuration never changes them.
const configuredDigests = new WeakMap<AppConfig, readonly Buffer[]>();

function everythingDigests(config: AppConfig): readonly Buffer[] {
  let digests = configuredDigests.get(config);
  if (digests === undefined) {
    digests = tokenDigests(config.adminToken ? [...config.readTokens, config.adminToken] : config.readTokens);
    configuredDigests.set(config, digests);
  }
  return digests;
}

/**
 * The read rule: while reads are open (readsOpen) everyone reads everything; otherwise a request needs one of
 * API_TOKENS, ADMIN_TOKEN (both every workspace) or a live token made through the API (its workspaces), except that
 * `anonymous: 'public'` lets one without a token see the public detail. A token made for some workspaces sees the
 * status's public detail only: its figures and ids span every workspace.
 */
function readerOf(config: AppConfig, issued: IssuedReadTokens, request: FastifyRequest, anonymous: 'refuse' | 'public'): Reader {
  if (readsOpen(config, issued)) return EVERYTHING;
  const presented = bearerToken(request);
  if (!presented) {
    if (anonymous === 'public') return ANONYMOUS_STATUS;
    throw new ApiError('missing_token', `Authorization: Bearer <token> is required: ${accepted(config, issued).oneOf}`);
  }
  if (matchesAnyDigest(presented, everythingDigests(config))) return EVERYTHING;
  const token = issued.match(presented);
  // A wrong token is refused even where anonymous requests pass: its client should learn it was rotated away. A
  // deleted token is a wrong one: the same answer.
  if (!token) throw new ApiError('invalid_token', `The token is ${accepted(config, issued).notOneOf}`);
  return { detail: token.scope.all ? 'full' : 'public', scope: token.scope, ...(token.consumers ? { consumers: token.consumers } : {}) };
}

/** Marks the routes a token limited to named consumers may call (GET /changes?consumer=, POST /changes/commit). */
const CONSUMER_ROUTE = Symbol('consumerRoute');
export const ConsumerRoute = (): MethodDecorator => SetMetadata(CONSUMER_ROUTE, true);

// Each request's reader, from the guard to the handler (@StatusDetail(), @ReadScope()); gone with the request.
const readers = new WeakMap<FastifyRequest, Reader>();

/** The query endpoints: 401 `missing_token` without a token, 403 `invalid_token` with a wrong one; none while reads are open. */
@Injectable()
export class ReadTokenGuard implements CanActivate {
  constructor(
    private readonly config: AppConfig,
    private readonly issued: IssuedReadTokens,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const reader = readerOf(this.config, this.issued, request, 'refuse');
    if (reader.consumers !== undefined && this.reflector.get<boolean | undefined>(CONSUMER_ROUTE, context.getHandler()) !== true) {
      throw new ApiError(
        'consumer_token',
        `This token reads only GET /changes?consumer= for the consumers ${reader.consumers.join(', ')}, and commits them (POST /changes/commit)`,
      );
    }
    readers.set(request, reader);
    return true;
  }
}

/** The status endpoints: like ReadTokenGuard, but with STATUS_PUBLIC=true a request without a token gets the public detail. */
@Injectable()
export class StatusAccessGuard implements CanActivate {
  constructor(
    private readonly config: AppConfig,
    private readonly issued: IssuedReadTokens,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    readers.set(request, readerOf(this.config, this.issued, request, this.config.statusPublic ? 'public' : 'refuse'));
    return true;
  }
}

/** On a handler under @StatusAccess(): the detail its reader may see (public when in any doubt). */
export const StatusDetail = createParamDecorator(
  (_data: unknown, context: ExecutionContext): ReadDetail => readers.get(context.switchToHttp().getRequest<FastifyRequest>())?.detail ?? 'public',
);

/** What a request's reader may read; `@ReadScope() scope: ReadScope` on a handler under @ReadAccess() or @StatusAccess(). */
export type ReadScope = WorkspaceScope;

/**
 * On a handler under @ReadAccess() or @StatusAccess(): its reader's scope (`scope.narrow(requested)` cuts a
 * requested list of workspaces to it). On any other route it fails the request: a scope guessed there would either
 * hide everything or show everything.
 */
export const ReadScope = createParamDecorator((_data: unknown, context: ExecutionContext): ReadScope => {
  const reader = readers.get(context.switchToHttp().getRequest<FastifyRequest>());
  if (!reader) throw new Error('@ReadScope() on a route guarded by neither @ReadAccess() nor @StatusAccess()');
  return reader.scope;
});

/**
 * On a handler under @ReadAccess(): the named consumers its reader's token is limited to (undefined: any). Routes that
 * take it are marked @ConsumerRoute(); every other read refuses such a token (403 `consumer_token`).
 */
export const ReadConsumers = createParamDecorator(
  (_data: unknown, context: ExecutionContext): readonly string[] | undefined =>
    readers.get(context.switchToHttp().getRequest<FastifyRequest>())?.consumers,
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
    // The registry of the tokens made through the API says when they close the reads, and when they open them again.
    const what =
      'the query endpoints (/posts, /accounts, /changes) and the full status are open to anyone who can reach this port, while no token made with POST /admin/tokens is live';
    this.logger.warn(
      this.config.openReadsChosen
        ? `API_TOKENS=none: ${what}, as chosen.`
        : `API_TOKENS is not set: ${what}. Set API_TOKENS to require a token (or API_TOKENS=none to say you mean it).`,
    );
  }
}
