import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * The lowest port the kernel hands out to outgoing sockets and to `listen(0)`. A port chosen
 * below it cannot be taken by another test's client connection or `listen(0)` between the
 * moment it is chosen and the moment a child process binds it (seen: a hub child that binds
 * late, after a Redis timeout, found its port answered by another test's node).
 */
function ephemeralRangeStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const value = Number(low);
    return Number.isInteger(value) && value > 12_000 ? value : 32_768;
  } catch {
    return 32_768;
  }
}

const FIRST_PORT = 10_000;
const lastPort = ephemeralRangeStart() - 1;
const handedOut = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port free on 127.0.0.1 now, picked at random below the ephemeral range and never
 * handed out twice by this process, so concurrent test processes rarely meet on one port.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = FIRST_PORT + Math.floor(Math.random() * (lastPort - FIRST_PORT + 1));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await bindable(port)) return port;
    handedOut.delete(port);
  }
  throw new Error(`no free port found between ${FIRST_PORT} and ${lastPort}`);
}
