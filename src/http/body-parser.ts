import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error';
import { startsWithBom, utf8Problem } from '../common/utf8';

/** Pozy's webhook bodies are small; anything larger is refused (413) before it is read whole. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * A JSON body's text: its bytes must be UTF-8 (RFC 8259, section 8.1), without a byte order mark. Decoding them
 * otherwise would turn each bad sequence into U+FFFD, and store something other than what was sent; a BOM is refused
 * rather than dropped for the same reason (a signed body is stored as signed). `400 invalid_encoding`, naming where.
 */
export function decodeJsonBody(body: Buffer): string {
  if (startsWithBom(body)) {
    throw invalidEncoding('the body starts with a byte order mark (EF BB BF); send UTF-8 without one');
  }
  const bad = utf8Problem(body);
  if (bad) throw invalidEncoding(`the body is not valid UTF-8 at byte ${bad.offset}: ${bad.problem}`);
  return body.toString('utf8');
}

function invalidEncoding(problem: string): ApiError {
  return new ApiError('invalid_encoding', `JSON must be UTF-8: ${problem}`, [{ field: 'body', problems: [problem] }]);
}

/**
 * JSON bodies arrive as bytes. Routes listed in `rawRoutes` get those exact bytes (a signature is computed over
 * them, before anything parses them, and decode them with decodeJsonBody after); every other route gets the parsed
 * value.
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
      let text: string;
      try {
        text = decodeJsonBody(body);
      } catch (error) {
        return done(error as Error);
      }
      void parseJson(request, text, (error, value) =>
        error ? done(new ApiError('malformed_json', `The body is not valid JSON: ${error.message}`)) : done(null, value),
      );
    },
  );
}
