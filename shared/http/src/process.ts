import type { AddressInfo } from 'node:net';

/** The message a service sends its parent (`npm start`, scripts/start.mjs) once it listens. */
export interface ListeningMessage {
  readonly type: 'herald:listening';
  readonly service: string;
  readonly port: number;
  readonly address: string;
}

/**
 * When started by a supervisor with an IPC channel (scripts/start.mjs): tell it the node
 * listens, so it prints its banner only once every node does. No channel: nothing.
 */
export function announceListening(service: string, address: AddressInfo): void {
  if (!process.send) return;
  const message: ListeningMessage = {
    type: 'herald:listening',
    service,
    port: address.port,
    address: address.address,
  };
  process.send(message);
}

/**
 * When started with an IPC channel: its closing means the supervisor is gone (even by SIGKILL),
 * so the node shuts down as on SIGTERM rather than living on as an orphan. The channel does not
 * keep the process alive by itself.
 */
export function exitWithParent(): void {
  if (!process.send) return;
  process.channel?.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
