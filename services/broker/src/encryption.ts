import { createCipheriv, createDecipheriv, createHash, randomFillSync } from 'node:crypto';
import { loggableError } from '@herald/redis';
import type { FastifyBaseLogger } from 'fastify';
import {
  BrokerError,
  ENCRYPTION_CHANGED,
  encryptionKeyMissing,
  invalidRequest,
  undecryptable,
} from './errors.js';
import type { MessageView, PopResult, PushItem, QueueCatalog } from './storage.js';

/**
 * Payload encryption for queues configured with `encryptionEnabled` (docs/broker-encryption.md "Payload
 * encryption"; docs/security.md). The node encrypts before a payload reaches storage and
 * decrypts wherever one leaves the broker, so both backends store the same envelope:
 *
 *   {"$herald.enc":1,"kid":"<8 hex>","iv":"<base64>","ct":"<base64>","tag":"<base64>"}
 *
 * AES-256-GCM (as Queen), a random 96-bit IV per message, the queue name as associated data (an
 * envelope copied into another queue does not open). `kid` is the first 4 bytes of the key's
 * SHA-256, so a message names the key it needs and old keys keep opening after a rotation.
 * Each message carries its own marker: turning the option on or off never makes a stored
 * message unreadable, and messages stored in clear before it was turned on are served as they are.
 */

/** The envelope's first member: a stored payload starting with it was written by this module. */
const MARKER = '$herald.enc';
const MARKER_TEXT = `{"${MARKER}":`;
const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * How long a node trusts what it last read of a queue's `encryptionEnabled` before reading it
 * again (docs/broker-encryption.md "Payload encryption"). Only a cache: storage refuses clear payloads for a
 * queue with the option on, whatever this node believed, so turning it on through any node takes
 * effect at once; turning it off reaches the other nodes within this time (they seal meanwhile).
 */
export const ENCRYPTION_FLAG_TTL_MS = 1000;

interface Envelope {
  kid: string;
  iv: string;
  ct: string;
  tag: string;
}

function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** A client payload may not pose as an envelope: refused at push (400), so every envelope is ours. */
export function refuseEnvelopeShape(payload: unknown, where: string): void {
  if (typeof payload === 'object' && payload !== null && Object.hasOwn(payload, MARKER)) {
    throw invalidRequest(`${where}.payload must not have a top-level "${MARKER}" member (reserved)`);
  }
}

/** The parsed form of `MARKER_TEXT`: the marker is the first member, as in the stored text. */
/** Whether a stored payload's JSON text is an envelope (the storage backends refuse clear text for encrypted queues). */
export function isSealedText(text: string): boolean {
  return text.startsWith(MARKER_TEXT);
}

function isEnvelopeValue(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.keys(value)[0] === MARKER;
}

/** IVs drawn from the CSPRNG 1,024 at a time: one call per message cost ~3 µs of a ~12 µs seal. */
const IV_POOL_BYTES = IV_BYTES * 1024;

export class PayloadCipher {
  private readonly keys = new Map<string, Buffer>();
  private readonly currentId: string | undefined;
  private readonly ivPool = Buffer.alloc(IV_POOL_BYTES);
  private ivAt = IV_POOL_BYTES;

  /** `current` encrypts (and decrypts); `old` only decrypt messages written before a rotation. */
  constructor(
    private readonly current: Buffer | undefined,
    old: readonly Buffer[] = [],
  ) {
    for (const key of old) this.keys.set(keyId(key), key);
    if (current) {
      this.currentId = keyId(current);
      this.keys.set(this.currentId, current);
    }
  }

  get canEncrypt(): boolean {
    return this.current !== undefined;
  }

  /** The envelope's JSON text for a payload's JSON text. */
  seal(queue: string, text: string): string {
    if (!this.current || !this.currentId) throw encryptionKeyMissing(queue);
    if (this.ivAt >= IV_POOL_BYTES) {
      randomFillSync(this.ivPool);
      this.ivAt = 0;
    }
    // Each IV is used once: the slice is read below, before the pool can be refilled.
    const iv = this.ivPool.subarray(this.ivAt, this.ivAt + IV_BYTES);
    this.ivAt += IV_BYTES;
    const cipher = createCipheriv(ALGORITHM, this.current, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(queue));
    const ct = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return `${MARKER_TEXT}1,"kid":"${this.currentId}","iv":"${iv.toString('base64')}","ct":"${ct.toString('base64')}","tag":"${tag.toString('base64')}"}`;
  }

  /** A stored payload's JSON text as the client pushed it (clear text is returned as is). */
  openText(queue: string, text: string): string {
    if (!text.startsWith(MARKER_TEXT)) return text;
    return this.open(queue, JSON.parse(text) as Record<string, unknown>);
  }

  /** A stored payload already parsed (message and dead-letter views) as the client pushed it. */
  openValue(queue: string, value: unknown): unknown {
    return isEnvelopeValue(value) ? (JSON.parse(this.open(queue, value)) as unknown) : value;
  }

  private open(queue: string, raw: Record<string, unknown>): string {
    const envelope = raw as Partial<Envelope>;
    const { kid, iv, ct, tag } = envelope;
    if (
      typeof kid !== 'string' ||
      typeof iv !== 'string' ||
      typeof ct !== 'string' ||
      typeof tag !== 'string'
    ) {
      throw undecryptable(queue, 'malformed envelope');
    }
    const key = this.keys.get(kid);
    if (!key) {
      throw undecryptable(
        queue,
        `it was encrypted with key id ${kid}, which this broker does not hold (QUEEN_ENCRYPTION_KEY, QUEEN_ENCRYPTION_OLD_KEYS)`,
      );
    }
    try {
      const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64'), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(Buffer.from(queue));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw undecryptable(queue, `authentication failed with key id ${kid} (altered or moved data)`);
    }
  }
}

/**
 * The cipher plus what each queue asks for. Pushes read the queue's option (cached for
 * ENCRYPTION_FLAG_TTL_MS); reads open whatever carries the marker, whatever the option says now.
 */
export class PayloadEncryption {
  private readonly flags = new Map<string, { enabled: boolean; until: number }>();

  constructor(
    private readonly catalog: QueueCatalog,
    readonly cipher: PayloadCipher,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Decryption failures are the operator's to fix (a key removed from the node): logged. */
  private opening<T>(queue: string, open: () => T): T {
    try {
      return open();
    } catch (error) {
      this.log.error({ queue, error: loggableError(error) }, 'payload decryption failed');
      throw error;
    }
  }

  /** Configure asks for encryption: refused (409) on a node that could not honour it. */
  checkConfigure(queue: string, encryptionEnabled: boolean | undefined): void {
    if (encryptionEnabled === true && !this.cipher.canEncrypt) throw encryptionKeyMissing(queue);
  }

  /** What configure stored, known at once on this node. */
  remember(queue: string, enabled: boolean): void {
    this.flags.set(queue, { enabled, until: Date.now() + ENCRYPTION_FLAG_TTL_MS });
  }

  private async enabled(queue: string): Promise<boolean> {
    const now = Date.now();
    const known = this.flags.get(queue);
    if (known && known.until > now) return known.enabled;
    const enabled = (await this.catalog.get(queue))?.options.encryptionEnabled === true;
    // Bounded: a queue seen once costs one entry until it is read again, and the map is
    // cleared rather than grown past the bound (the entries are only a cache).
    if (this.flags.size >= 10_000) this.flags.clear();
    this.flags.set(queue, { enabled, until: now + ENCRYPTION_FLAG_TTL_MS });
    return enabled;
  }

  /**
   * Writes items with the payloads of encrypted queues sealed. Storage refuses clear payloads
   * for a queue whose option was turned on since this node read it (through another node): then
   * the option is read again and the write retried once (resend-safe: dedup by transactionId and
   * messageId answers what the first attempt stored as queued).
   */
  async store<T>(items: PushItem[], write: (sealed: PushItem[]) => Promise<T>): Promise<T> {
    try {
      return await write(await this.sealItems(items));
    } catch (error) {
      if (!(error instanceof BrokerError) || error.code !== ENCRYPTION_CHANGED) throw error;
      this.flags.clear();
      return write(await this.sealItems(items));
    }
  }

  /** Items for storage: those of encrypted queues with their payload sealed (new objects). */
  private async sealItems(items: PushItem[]): Promise<PushItem[]> {
    const queues = [...new Set(items.map((item) => item.queue))];
    const encrypted = new Set<string>();
    for (const queue of queues) if (await this.enabled(queue)) encrypted.add(queue);
    if (encrypted.size === 0) return items;
    return items.map((item) =>
      encrypted.has(item.queue) ? { ...item, data: this.cipher.seal(item.queue, item.data) } : item,
    );
  }

  /** A pop's messages in clear (new objects: the storage's answer is left as it came). */
  openPop(result: PopResult): PopResult {
    const sealed = result.partitions.some((popped) =>
      popped.messages.some((message) => message.data.startsWith(MARKER_TEXT)),
    );
    if (!sealed) return result;
    return {
      ...result,
      partitions: result.partitions.map((popped) => ({
        ...popped,
        messages: popped.messages.map((message) => ({
          ...message,
          data: this.opening(popped.queue, () => this.cipher.openText(popped.queue, message.data)),
        })),
      })),
    };
  }

  openView<V extends MessageView>(view: V): V {
    return { ...view, data: this.opening(view.queue, () => this.cipher.openValue(view.queue, view.data)) };
  }
}
