import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error';
import { bearerToken, matchesAnyToken } from './bearer-token';
import { AppConfig } from '../config/app-config';
import { keepOpenWhileItWorks } from '../http/server-timeouts';

/** `Authorization: Bearer <ADMIN_TOKEN>`; with no ADMIN_TOKEN configured, admin endpoints are closed (403). */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const token = this.config.adminToken;
    if (!token) throw new ApiError('admin_disabled', 'Admin endpoints are disabled: set ADMIN_TOKEN to enable them');
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const presented = bearerToken(request);
    if (!presented) throw new ApiError('missing_token', 'Authorization: Bearer <ADMIN_TOKEN> is required');
    if (!matchesAnyToken(presented, [token])) throw new ApiError('invalid_token', 'The admin token is not valid');
    keepOpenWhileItWorks(request);
    return true;
  }
}
