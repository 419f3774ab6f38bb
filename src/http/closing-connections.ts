import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { HEADERS_TIMEOUT_MS } from './server-timeouts';

/**
 * What the service closes when it stops serving, beyond what Node does. Node's `server.close()` closes the connections
 * idle at that moment and stops the check that enforces the headers timeout; a connection that has not begun a request
 * is not idle to Node (it is waiting for headers), so once close began nothing but its socket idle timeout
 * (`connectionTimeout`, a long poll's wait plus 30 s) ends it, and `close()` waits that long. A keep-alive client opens
 * such a connection right at shutdown: undici, after a request it aborted (a long poll given up), connects again as soon
 * as the service closes that connection, which is when the released long poll is answered, just before the HTTP server
 * closes. With `closing()`, every connection without a request in progress is closed now, and one without a request
 * that comes later (before the server stops listening) once it has sent none for HEADERS_TIMEOUT_MS; a request in
 * progress is answered (with `Connection: close`), and its connection closed once the last of its answers is sent.
 */
export function closeQuietConnections(server: Server): { closing(): void } {
  /** Open connections, with the number of their requests not answered yet. */
  const open = new Map<Socket, number>();
  let closing = false;

  server.on('connection', (socket: Socket) => {
    open.set(socket, 0);
    socket.once('close', () => open.delete(socket));
    if (!closing) return;
    const quiet = setTimeout(() => {
      if (open.get(socket) === 0) socket.destroy();
    }, HEADERS_TIMEOUT_MS);
    quiet.unref();
    socket.once('close', () => clearTimeout(quiet));
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    if (!open.has(socket)) return;
    open.set(socket, open.get(socket)! + 1);
    response.once('close', () => {
      const pending = open.get(socket);
      if (pending === undefined) return;
      open.set(socket, pending - 1);
      // An answer whose headers went out before close began kept the connection alive: end it now that it is sent.
      if (closing && pending === 1) socket.end();
    });
  });

  return {
    closing() {
      closing = true;
      for (const [socket, pending] of open) if (pending === 0) socket.destroy();
    },
  };
}
