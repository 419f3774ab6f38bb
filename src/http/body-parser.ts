import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error';

/** Pozy's webhook bodies are small; anything larger is refused (413) before it is read whole. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * JSON bodies arrive as bytes. Routes listed in `rawRoutes` get those exact bytes (a signature is computed over
 * them, before anything parses them); every other route gets the parsed value.
 */
export function registerJsonParser(fastify: FastifyInstance, rawRoutes: readonly string[]): void {
  // Fastify's own JSON parser refuses __proto__ and constructor.prototype keys (prototype poisoning).
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  // JSON only: other media types (Fastify also parses text/plain by default) answer 415.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: BODY_LIMIT_BYTES },
    (request: FastifyRequest, body: Buffer, done: (error: Error | null, value?: unknown) => void) => {
      if (rawRoutes.includes(request.routeOptions.url ?? '')) return done(null, body);
      if (body.length === 0) return done(null, undefined);
      void parseJson(request, body.toString('utf8'), (error, value) =>
        error ? done(new ApiError(400, 'malformed_json', `The body is not valid JSON: ${error.message}`)) : done(null, value),
      );
    },
  );
}
