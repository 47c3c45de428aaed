import { randomFillSync } from 'node:crypto';

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
const hex = (byte: number): string => HEX[byte] as string;

export interface UuidV7Sources {
  /** Milliseconds since the epoch (default `Date.now`). */
  readonly now?: () => number;
  /** Fills a buffer with random bytes (default `crypto.randomFillSync`). */
  readonly fillRandom?: (buffer: Buffer) => void;
}

/**
 * A generator of time-ordered ids (UUIDv7, RFC 9562): message, lease and transaction ids of the
 * broker, generated update ids of the hub. Monotonic within the generator as uuid's v7 is: a
 * 31-bit counter, seeded at random each millisecond, fills rand_a and the top of rand_b; the
 * rest is random. Random bytes are drawn in blocks (one fill per 682 ids): the per-id
 * `randomFillSync` of the uuid package showed in the broker's push profile. The sources are
 * parameters for tests (a frozen clock, a clock going back, an exhausted counter).
 */
export function uuidV7Generator(sources: UuidV7Sources = {}): () => string {
  const now = sources.now ?? Date.now;
  const fillRandom = sources.fillRandom ?? ((buffer: Buffer) => randomFillSync(buffer));
  const pool = Buffer.alloc(4096);
  let poolOffset = pool.length;
  let lastMs = -1;
  let sequence = 0;

  function randomBytes(count: number): number {
    if (poolOffset + count > pool.length) {
      fillRandom(pool);
      poolOffset = 0;
    }
    const offset = poolOffset;
    poolOffset += count;
    return offset;
  }

  return () => {
    let ms = now();
    if (ms > lastMs) {
      sequence = pool.readUInt32BE(randomBytes(4)) >>> 1;
      lastMs = ms;
    } else {
      // Same millisecond, or the clock went back: count on from the last id.
      sequence = (sequence + 1) | 0;
      if (sequence > 0x7fffffff || sequence < 0) {
        // Counter exhausted within one millisecond: borrow the next one (uuid does the same).
        lastMs += 1;
        sequence = pool.readUInt32BE(randomBytes(4)) >>> 1;
      }
      ms = lastMs;
    }
    const at = randomBytes(6);
    const high = Math.floor(ms / 0x10000);
    const low = ms % 0x10000;
    return (
      hex((high >>> 24) & 0xff) +
      hex((high >>> 16) & 0xff) +
      hex((high >>> 8) & 0xff) +
      hex(high & 0xff) +
      '-' +
      hex((low >>> 8) & 0xff) +
      hex(low & 0xff) +
      '-' +
      hex(0x70 | ((sequence >>> 27) & 0x0f)) +
      hex((sequence >>> 19) & 0xff) +
      '-' +
      hex(0x80 | ((sequence >>> 13) & 0x3f)) +
      hex((sequence >>> 5) & 0xff) +
      '-' +
      hex(((sequence << 3) & 0xf8) | ((pool[at] as number) & 0x07)) +
      hex(pool[at + 1] as number) +
      hex(pool[at + 2] as number) +
      hex(pool[at + 3] as number) +
      hex(pool[at + 4] as number) +
      hex(pool[at + 5] as number)
    );
  };
}

/** The process's UUIDv7 generator: ids from it are strictly increasing (as strings too). */
export const uuidv7: () => string = uuidV7Generator();
