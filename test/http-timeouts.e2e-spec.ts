import { createServer } from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
import { MAX_WAIT_S } from '../src/changes/dto/list-changes.query';
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from '../src/http/server-timeouts';
import { RunningService, startService, waitFor } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

/** Uploads that stop one byte short of their body, as the review sent them. */
const STALLED_UPLOADS = 20;
const BODY_BYTES = 1_000_000;

/** A raw connection to the service: what it received, and when the service closed it. */
interface Probe {
  socket: Socket;
  received: string;
  closedAt: number | undefined;
}

describe('slow and stalled requests', () => {
  let spec: ServiceSpec;
  let service: RunningService;
  let port: number;

  beforeAll(async () => {
    spec = await startSpec('http_timeouts', { env: { ROLE: 'api' } });
    service = spec.service;
    port = Number(new URL(service.baseUrl).port);
  });

  afterAll(async () => {
    await spec?.close();
  });

  function probe(start: (socket: Socket) => void): Promise<Probe> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const p: Probe = { socket, received: '', closedAt: undefined };
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (p.received += chunk));
      socket.on('close', () => (p.closedAt = Date.now()));
      // A reset after the answer is still a closed socket; what was received before it is kept.
      socket.on('error', () => undefined);
      socket.once('connect', () => {
        start(socket);
        resolve(p);
      });
      socket.once('error', reject);
    });
  }

  const timedOut = (p: Probe) => {
    const [head, body] = p.received.split('\r\n\r\n');
    return { status: head.split('\r\n')[0], body: body ? JSON.parse(body) : undefined };
  };

  it('sets Node to the limits docs/security.md states', () => {
    const server = service.app.getHttpServer();
    expect({
      headersTimeout: server.headersTimeout,
      requestTimeout: server.requestTimeout,
      keepAliveTimeout: server.keepAliveTimeout,
      timeout: server.timeout,
    }).toEqual({
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      timeout: MAX_WAIT_S * 1000 + 30_000,
    });
  });

  it('answers 408 and closes stalled uploads, slow headers and silent connections, while a 30 s long poll answers normally', async () => {
    const started = Date.now();
    // The long poll waits silently longer than the request and headers limits: they must not apply to it.
    const longPoll = fetch(`${service.baseUrl}/changes?wait=${MAX_WAIT_S}`).then(async (response) => ({
      status: response.status,
      body: await response.json(),
      after: Date.now() - started,
    }));

    const uploads = await Promise.all(
      Array.from({ length: STALLED_UPLOADS }, () =>
        probe((socket) => {
          socket.write(`POST /webhooks/pozy HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${BODY_BYTES}\r\n\r\n`);
          // Everything but the closing brace.
          socket.write(`{"pad":"${'x'.repeat(BODY_BYTES - 10)}"`);
        }),
      ),
    );
    // One header line a second: each arrives well within any idle limit, the headers never end.
    const slowHeaders = await probe((socket) => {
      socket.write('POST /webhooks/pozy HTTP/1.1\r\n');
      const drip = setInterval(() => (socket.writable ? socket.write('X-Slow: 1\r\n') : clearInterval(drip)), 1_000);
      socket.on('close', () => clearInterval(drip));
    });
    const silent = await probe(() => undefined);

    const all = [...uploads, slowHeaders, silent];
    await waitFor('the service to close every slow connection', async () => (all.every((p) => p.closedAt !== undefined) ? true : undefined), 60_000);

    for (const p of all) {
      expect(timedOut(p)).toEqual({
        status: 'HTTP/1.1 408 Request Timeout',
        body: { statusCode: 408, error: 'request_timeout', message: 'The request was not received in time' },
      });
    }
    // Nothing was stored from the uploads cut short.
    expect((await service.pool.query('SELECT count(*)::int AS n FROM pozy_event')).rows[0]).toEqual({ n: 0 });

    const poll = await longPoll;
    expect(poll).toMatchObject({ status: 200, body: { data: [] } });
    // It waited its whole 30 s (no change came), past the limits on receiving a request.
    expect(poll.after).toBeGreaterThan(REQUEST_TIMEOUT_MS);
  }, 120_000);

  it("lets an operator's request work past the idle limit", async () => {
    const idleMs = service.app.getHttpServer().timeout;
    // A Pozy that takes longer than the idle limit to say it does not know a post.
    const slowPozy = createServer((_request, response) => {
      setTimeout(() => response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Post not found"}'), idleMs + 3_000);
    });
    await new Promise<void>((resolve) => slowPozy.listen(0, '127.0.0.1', resolve));
    const admin = await startService(spec.db.url, {
      ROLE: 'api',
      ADMIN_TOKEN: 'admin_token_for_slow_requests',
      POZY_API_URL: `http://127.0.0.1:${(slowPozy.address() as AddressInfo).port}`,
      POZY_TIMEOUT_MS: String(idleMs + 30_000),
      POZY_MAX_RETRIES: '0',
    });
    try {
      // A post the mirror never held is read from Pozy in the request itself.
      const started = Date.now();
      const response = await fetch(`${admin.baseUrl}/admin/resync/posts/66aa01f3c2b1e4d5f6a7b8c9`, {
        method: 'POST',
        headers: { authorization: 'Bearer admin_token_for_slow_requests' },
      });
      expect({ status: response.status, body: await response.json() }).toEqual({
        status: 404,
        body: expect.objectContaining({ statusCode: 404, error: 'unknown_to_pozy' }),
      });
      expect(Date.now() - started).toBeGreaterThan(idleMs);
    } finally {
      await admin.close();
      slowPozy.closeAllConnections();
      await new Promise((resolve) => slowPozy.close(resolve));
    }
  }, 180_000);
});
