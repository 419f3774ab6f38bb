/**
 * A loopback HTTP proxy in front of the Pozy simulator that holds some answers back after Pozy produced them.
 *
 * The simulator's latency faults wait before it reads its world, so every answer shows the world as of the moment
 * it is sent and two reads of one post can never come back older-after-newer. Real latency also falls after the
 * read (the network, a slow client), and then a read that started earlier can finish later with an older state.
 * This proxy models that: a fraction of answers is delayed on the way back, whole, after the simulator answered.
 */
import { createServer, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { AddressInfo } from 'node:net';
import { Pool as HttpPool } from 'undici';
import { Rng } from '../simulator/faults';
import { sleep } from './processes';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'upgrade']);

function forwardable(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name, value]) => value !== undefined && !HOP_BY_HOP.has(name.toLowerCase())));
}

export interface SlowReturnProxy {
  url: string;
  close(): Promise<void>;
}

/** Proxies every request to `target`; an answer is held `delayMs` more with probability `rate` (seeded). */
export async function startSlowReturnProxy(target: string, options: { rate: number; delayMs: number; seed: number }): Promise<SlowReturnProxy> {
  const upstream = new HttpPool(target, { connections: 256 });
  const rng = new Rng(options.seed);
  const server = createServer((request, response) => {
    if (request.method !== 'GET') {
      response.writeHead(405, { 'content-type': 'application/json' });
      response.end('{"error":"bench proxy: GET only"}');
      return;
    }
    const slow = rng.chance(options.rate);
    upstream
      .request({
        method: 'GET',
        path: request.url ?? '/',
        headers: forwardable(request.headers) as Record<string, string>,
      })
      .then(async (answer) => {
        const body = Buffer.from(await answer.body.arrayBuffer());
        if (slow) await sleep(options.delayMs);
        response.writeHead(answer.statusCode, { ...forwardable(answer.headers), 'content-length': body.length });
        response.end(body);
      })
      .catch(() => {
        response.writeHead(502, { 'content-type': 'application/json' });
        response.end('{"error":"bench proxy: upstream failed"}');
      });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await upstream.close();
    },
  };
}
