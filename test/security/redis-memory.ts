import { connect } from 'node:net';

/** `used_memory` of a Redis server, read with one inline INFO command (no client library). */
export function redisUsedMemory(redisUrl: string): Promise<number> {
  const { hostname, port } = new URL(redisUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port || 6379), hostname);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      const match = /used_memory:(\d+)/.exec(text);
      if (match) {
        socket.destroy();
        resolve(Number(match[1]));
      }
    });
    socket.on('error', reject);
    socket.write('INFO memory\r\n');
  });
}
