import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error';

/** Pozy's webhook bodies are small; anything larger is refused (413) before it is read whole. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * JSON bodies arrive as bytes. Routes listed in `rawRoutes` get those exact bytes (a signature is computed over
 * them, before anything parses them); every other route gets the parsed value.
 */
export function registerJsonParser(fastify: FastifyInstance, rawRoutes: readonly string[]): void {
  // JSON only: other media types (Fastify also parses text/plain by default) answer 415.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: BODY_LIMIT_BYTES },
    (request: FastifyRequest, body: Buffer, done: (error: Error | null, value?: unknown) => void) => {
      if (rawRoutes.includes(request.routeOptions.url ?? '')) return done(null, body);
      if (body.length === 0) return done(null, undefined);
      try {
        done(null, JSON.parse(body.toString('utf8')));
      } catch (error) {
        done(new ApiError(400, 'malformed_json', `The body is not valid JSON: ${(error as Error).message}`));
      }
    },
  );
}
