import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/**
 * How long a client may take over a request, so that slow or stalled uploads cannot hold sockets (and the body
 * buffered so far) forever. Pozy gives up on a delivery after 5 s, and no caller sends more than the 1 MiB body
 * limit. A request past these limits is answered `408 request_timeout` (http/framework-errors.ts) and closed.
 */
export const HEADERS_TIMEOUT_MS = 5_000;
/** The whole request, body included: its request line, its headers and its body all received. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** Node checks the two limits above this often (its default, 30 s, would let a socket overstay them by as much). */
export const TIMEOUT_CHECK_INTERVAL_MS = 1_000;
/**
 * Between two requests on a kept-alive connection: longer than the 60 s idle timeout of the usual load balancers,
 * so that the balancer, not the service, closes an idle connection (the other way round it may send a request
 * onto a connection being closed). Fastify's own default, kept.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** Beyond the longest a handler may stay silent (a long poll's wait), before a socket without a byte either way is closed. */
const IDLE_MARGIN_MS = 30_000;

/**
 * Fastify's server options for these limits. `silentForMs`: the longest a handler legitimately sends nothing (GET
 * /changes' long poll); a socket is closed once no byte has gone either way for that long plus IDLE_MARGIN_MS,
 * which also ends a client that stops reading an answer. The request limits apply only until the request is
 * received, never to the handler's wait.
 */
export function serverTimeouts(silentForMs: number): Pick<FastifyServerOptions, 'requestTimeout' | 'connectionTimeout' | 'keepAliveTimeout'> & {
  http: { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number };
} {
  return {
    requestTimeout: REQUEST_TIMEOUT_MS,
    connectionTimeout: silentForMs + IDLE_MARGIN_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // Read by Node's http.createServer: the checking interval can only be set there.
    http: { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
  };
}

/**
 * An operator's request may work longer than any idle limit without a byte sent (a prune run in the request, a read of
 * Pozy waiting out a budget pause of up to POZY_MAX_PAUSE_MS): its connection is not closed for silence. Only for a
 * request that showed the admin token, so no anonymous client can hold a socket this way.
 */
export function keepOpenWhileItWorks(request: FastifyRequest): void {
  request.raw.socket?.setTimeout(0);
}
