/**
 * Closing a connection whose request body was refused before it was read (413, 402, 400 at the first
 * part): if the server simply closes it, the kernel answers the body bytes still arriving with a reset,
 * and a client that is still sending often loses the answer it was sent a moment earlier (it sees EPIPE
 * or ECONNRESET instead of the 413). The cure (nginx's "lingering close"): send the answer, half-close,
 * and keep discarding what arrives for a short while, so the client gets time to read the answer and
 * stop. Bounded in time, so a client that keeps sending cannot hold the connection open.
 */
import type { Socket } from 'node:net';

export const LINGER_MS = 2_000;

/** After the response ends, Node closes the socket with destroySoon(): linger instead. */
export function lingerOnClose(socket: Socket, lingerMs = LINGER_MS): void {
  socket.destroySoon = function lingeringDestroy(this: Socket) {
    this.end();
    // Node's server discards the unread body (req._dump); the socket must keep flowing for that.
    this.resume();
    const timer = setTimeout(() => this.destroy(), lingerMs);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
    // The client stopped sending and closed its side: nothing left to linger for.
    this.once('end', () => this.destroy());
  };
}
