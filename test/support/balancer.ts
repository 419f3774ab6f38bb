import { Agent, createServer, IncomingHttpHeaders, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

// A round-robin HTTP load balancer on loopback, in front of several replicas of the service.

/** Connection-level headers a proxy must not forward (RFC 9110 §7.6.1). */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade'];

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const copy = { ...headers };
  for (const name of HOP_BY_HOP) delete copy[name];
  return copy;
}

export interface Balancer {
  url: string;
  /** Requests answered by each target, in the order of `targets`. */
  answered: number[];
  /** Requests no target answered (the balancer said 502). */
  errors: string[];
  close(): Promise<void>;
}

/** Sends each request to the next target in turn: method, path, headers and raw body; the answer is piped back. */
export async function startBalancer(targets: readonly string[]): Promise<Balancer> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const answered = targets.map(() => 0);
  const errors: string[] = [];
  let next = 0;
  const server = createServer((req, res) => {
    const index = next;
    next = (next + 1) % targets.length;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = { ...forwardable(req.headers), 'content-length': String(body.length) };
      const upstream = httpRequest(new URL(req.url ?? '/', targets[index]), { method: req.method, headers, agent }, (answer) => {
        answered[index] += 1;
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        answer.pipe(res);
      });
      upstream.on('error', (error) => {
        errors.push(`${targets[index]}: ${error.message}`);
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'bad_gateway', message: error.message }));
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    answered,
    errors,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      agent.destroy();
      await closed;
    },
  };
}
