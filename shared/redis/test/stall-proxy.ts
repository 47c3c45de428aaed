import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy between a client and Redis that can hold what the client sends (Redis never sees
 * it, the client waits for a reply) and cut every connection (the client sees a drop and
 * reconnects, re-sending what was not answered). Enough to drive ioredis' re-send path.
 */
export class StallProxy {
  private holding = false;
  private readonly pairs = new Set<[Socket, Socket]>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(upstreamPort: number): Promise<StallProxy> {
    let proxy: StallProxy | undefined;
    const server = createServer((client) => {
      const upstream = connect(upstreamPort, '127.0.0.1');
      const pair: [Socket, Socket] = [client, upstream];
      proxy?.pairs.add(pair);
      const close = () => {
        client.destroy();
        upstream.destroy();
        proxy?.pairs.delete(pair);
      };
      client.on('data', (chunk) => {
        if (!proxy?.holding) upstream.write(chunk);
      });
      upstream.on('data', (chunk) => client.write(chunk));
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('proxy has no port');
    proxy = new StallProxy(server, address.port);
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** From now on, what clients send is dropped (as if Redis stalled before reading it). */
  hold(): void {
    this.holding = true;
  }

  /** Forwards again; then cuts every connection, so clients reconnect and re-send. */
  releaseAndCut(): void {
    this.holding = false;
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.releaseAndCut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
