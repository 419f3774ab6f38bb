import { createConnection, createServer, Server, Socket } from 'node:net';

export type ProxyMode = 'pass' | 'blackhole' | 'stall';

export interface ProxyTarget {
  host: string;
  port: number;
}

/**
 * A TCP proxy on loopback in front of PostgreSQL, for outages on demand: `pass` forwards; `blackhole` accepts
 * connections and sends nothing on (what a network partition looks like: timeouts, not refusals); switching to either
 * cuts every open connection. `stall` keeps the open connections and drops what goes either way on them: a server
 * that stopped answering mid-conversation, which no statement timeout of its own can end.
 * `point` sends new connections elsewhere and leaves the open ones where they are: a DNS name moved to another host.
 */
export class TcpProxy {
  private mode: ProxyMode = 'pass';
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  /** Connections made through the proxy, by the port of the server they went to. */
  readonly connectionsTo = new Map<number, number>();

  private constructor(private target: ProxyTarget) {
    this.server = createServer((client) => {
      this.track(client);
      if (this.mode === 'blackhole') return;
      const upstream = createConnection(this.target);
      this.connectionsTo.set(this.target.port, (this.connectionsTo.get(this.target.port) ?? 0) + 1);
      this.track(upstream);
      client.on('data', (chunk: Buffer) => this.mode !== 'stall' && upstream.write(chunk));
      upstream.on('data', (chunk: Buffer) => this.mode !== 'stall' && client.write(chunk));
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
  }

  static async start(target: ProxyTarget): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    const address = this.server.address();
    if (typeof address !== 'object' || !address) throw new Error('proxy is not listening');
    return address.port;
  }

  /** New connections go to `target` from now on; the open ones stay where they are. */
  point(target: ProxyTarget): void {
    this.target = target;
  }

  set(mode: ProxyMode): void {
    this.mode = mode;
    if (mode !== 'stall') for (const socket of this.sockets) socket.destroy();
  }

  /** The database URL, through the proxy. */
  url(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  async stop(): Promise<void> {
    this.set('pass');
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
  }
}
