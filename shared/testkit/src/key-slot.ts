/** CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with (cluster spec, "Keys distribution model"). */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/**
 * The cluster slot of a key: CRC16 of its hash tag (the text between the first `{` and the next
 * `}`, when not empty) or of the whole key, modulo 16384.
 */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % 16384;
  }
  return crc16(bytes) % 16384;
}
