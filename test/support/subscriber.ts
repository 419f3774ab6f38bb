import { createServer, IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** How the subscriber answers one request: a status (with headers), or `hang` (never answer: the sender's timeout fires). */
export type Answer = number | 'hang' | { status: number; headers: Record<string, string> };

const statusOf = (answer: Answer): number | undefined => (answer === 'hang' ? undefined : typeof answer === 'number' ? answer : answer.status);

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: {
    type: string;
    timestamp: string;
    data: {
      id: string;
      workspaceId: string;
      sequence: number;
      pozyUpdatedAt: string | null;
      post?: Record<string, unknown>;
      account?: Record<string, unknown>;
    };
  };
  /** When the request arrived (ms since epoch). */
  at: number;
  answer: Answer;
}

/** A real HTTP endpoint on loopback that receives change notifications and answers as a test tells it to. */
export class TestSubscriber {
  readonly received: Received[] = [];
  /** TCP connections accepted: what shows that nothing so much as connected. */
  connections = 0;
  private plan: Answer[] = [];
  private fallback: Answer = 204;
  /** Each answer is sent this long after its request arrived (slow()). */
  private delayMs = 0;
  private readonly sockets = new Set<Socket>();
  private readonly hanging = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(path = '/hooks/pozy-sync'): Promise<TestSubscriber> {
    // eslint-disable-next-line prefer-const -- the handlers below need it before it can be built
    let subscriber: TestSubscriber | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => subscriber!.handle(request.headers, Buffer.concat(chunks).toString('utf8'), response));
    });
    server.on('connection', (socket) => {
      if (subscriber) subscriber.connections += 1;
      subscriber?.sockets.add(socket);
      socket.on('close', () => subscriber?.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (typeof address !== 'object' || !address) throw new Error('subscriber is not listening');
    subscriber = new TestSubscriber(server, `http://127.0.0.1:${address.port}${path}`);
    return subscriber;
  }

  /** The next requests get these answers, in order; after them, `fallback`. */
  answer(plan: Answer[], fallback: Answer = this.fallback): void {
    this.plan = [...plan];
    this.fallback = fallback;
  }

  /** From now on, every answer is sent `ms` after its request arrived (0: at once): a slow, still healthy subscriber. */
  slow(ms: number): void {
    this.delayMs = ms;
  }

  /** Requests the subscriber acknowledged (2xx). */
  get acknowledged(): Received[] {
    return this.received.filter((r) => {
      const status = statusOf(r.answer);
      return status !== undefined && status >= 200 && status < 300;
    });
  }

  /** Received notifications about one resource id. */
  about(id: string): Received[] {
    return this.received.filter((r) => r.json.data.id === id);
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(headers: IncomingHttpHeaders, body: string, response: ServerResponse): void {
    const answer = this.plan.shift() ?? this.fallback;
    this.received.push({ headers, body, json: JSON.parse(body) as Received['json'], at: Date.now(), answer });
    if (answer === 'hang') {
      this.hanging.add(response);
      response.on('close', () => this.hanging.delete(response));
      return;
    }
    const status = statusOf(answer)!;
    const extra = typeof answer === 'object' ? answer.headers : {};
    const send = () => response.writeHead(status, { 'content-type': 'application/json', ...extra }).end(JSON.stringify({ ok: status < 300 }));
    if (this.delayMs <= 0) {
      send();
      return;
    }
    // Until it answers, close() ends it like a hanging one.
    this.hanging.add(response);
    const timer = setTimeout(() => {
      this.hanging.delete(response);
      if (!response.destroyed) send();
    }, this.delayMs);
    response.on('close', () => {
      clearTimeout(timer);
      this.hanging.delete(response);
    });
  }
}

/** Verifies a received notification exactly as a receiver would, with the Standard Webhooks library. */
export function verifies(secret: string, received: Received): boolean {
  try {
    new Webhook(secret).verify(received.body, {
      'webhook-id': String(received.headers['webhook-id']),
      'webhook-timestamp': String(received.headers['webhook-timestamp']),
      'webhook-signature': String(received.headers['webhook-signature']),
    });
    return true;
  } catch {
    return false;
  }
}
