import { timingSafeEqual, createHash } from 'node:crypto';
import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error';
import { AppConfig } from '../config/app-config';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** `Authorization: Bearer <ADMIN_TOKEN>`; with no ADMIN_TOKEN configured, admin endpoints are closed (403). */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const token = this.config.adminToken;
    if (!token) throw new ApiError(403, 'admin_disabled', 'Admin endpoints are disabled: set ADMIN_TOKEN to enable them');
    const header = context.switchToHttp().getRequest<FastifyRequest>().headers.authorization;
    const presented = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
    if (!presented) throw new ApiError(401, 'missing_token', 'Authorization: Bearer <ADMIN_TOKEN> is required');
    // Digests first: timingSafeEqual needs equal lengths, and comparing digests leaks nothing about the length.
    if (!timingSafeEqual(digest(presented), digest(token))) {
      throw new ApiError(403, 'invalid_token', 'The admin token is not valid');
    }
    return true;
  }
}
