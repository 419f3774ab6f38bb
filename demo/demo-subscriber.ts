import { createServer, Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

/** What a team's endpoint would keep: per resource, the newest version it was told about. */
export interface DemoSubscriber {
  url: string;
  secret: string;
  received: number;
  /** Deliveries of an id already received (retries, replays): a receiver deduplicates them. */
  repeated: number;
  badSignatures: number;
  /** `post:<id>` / `account:<id>` → the highest sequence received. */
  latest: Map<string, number>;
  close(): Promise<void>;
}

/** A change-notification receiver on loopback for the demo: verifies every signature, as docs/consuming.md ("Change notifications") shows. */
export async function startDemoSubscriber(): Promise<DemoSubscriber> {
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const verifier = new Webhook(secret);
  const seen = new Set<string>();
  const subscriber = { secret, received: 0, repeated: 0, badSignatures: 0, latest: new Map<string, number>() } as DemoSubscriber;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let event: { type: string; data: { id: string; sequence: number } };
      try {
        event = verifier.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>) as typeof event;
      } catch {
        subscriber.badSignatures += 1;
        res.writeHead(401).end();
        return;
      }
      const id = String(req.headers['webhook-id']);
      if (seen.has(id)) subscriber.repeated += 1;
      else {
        seen.add(id);
        subscriber.received += 1;
        const key = `${event.type.split('.')[0]}:${event.data.id}`;
        subscriber.latest.set(key, Math.max(subscriber.latest.get(key) ?? 0, event.data.sequence));
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('the demo subscriber is not listening');
  subscriber.url = `http://127.0.0.1:${address.port}/pozy-sync`;
  subscriber.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      // The service's deliveries keep their connections busy: a close waiting for them to end may never come.
      server.closeAllConnections();
    });
  return subscriber;
}
