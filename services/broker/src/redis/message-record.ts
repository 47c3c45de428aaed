/*
 * A message as its partition's stream keeps it: one field, `r`, holding the record
 * `<header>\n<data>`. The header is the JSON text of [messageId, transactionId, traceId,
 * producerSub] ('' for none); JSON text holds no raw newline, so the first one ends it, and the
 * data (the payload's JSON text, stored as pushed) is the rest. One field instead of five: a pop
 * reads, and answers, one value per message (lua/includes/message-record.lua reads the same).
 * Entries written before the record (fields m, t, tr, d, s) are read too.
 */
import type { PushItem } from '../push-item.js';
import { wellFormed } from '../validation.js';

/**
 * Before a record in a push's arguments: store the five fields (push_items in
 * lua/includes/push-items.lua), for a node of an earlier release to read (record-readers.ts).
 */
export const FIVE_FIELDS = '5';

/** The fields of a stored message, '' where it has no trace or producer. */
export interface MessageFields {
  id: string;
  transactionId: string;
  traceId: string;
  data: string;
  producerSub: string;
}

/**
 * The record of a pushed item. The producer is the token's `sub`, which may hold a lone
 * surrogate (a JSON escape in the token): made well-formed here, as Redis's UTF-8 storing of it
 * always did, so that the header decodes in Lua (lua-cjson refuses a lone surrogate escape).
 */
export function messageRecord(item: PushItem): string {
  const header = JSON.stringify([
    item.messageId,
    item.transactionId,
    item.traceId ?? '',
    wellFormed(item.producerSub ?? ''),
  ]);
  return `${header}\n${item.data}`;
}

/** The fields of a record (messageRecord's text, or pop-1.lua's for an earlier entry). */
export function readRecord(record: string): MessageFields {
  const end = record.indexOf('\n');
  const [id = '', transactionId = '', traceId = '', producerSub = ''] = JSON.parse(
    record.slice(0, end),
  ) as string[];
  return { id, transactionId, traceId, data: record.slice(end + 1), producerSub };
}

/** A stream entry's field list (name, value, …) by name. */
export function fieldsOf(list: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let index = 0; index + 1 < list.length; index += 2) {
    fields[list[index] as string] = list[index + 1] as string;
  }
  return fields;
}

/** The fields of a stream entry's field list: its record, or an earlier entry's five fields. */
export function entryFields(list: readonly string[]): MessageFields {
  if (list[0] === 'r') return readRecord(list[1] ?? '');
  const fields = fieldsOf(list);
  return {
    id: fields.m ?? '',
    transactionId: fields.t ?? '',
    traceId: fields.tr ?? '',
    data: fields.d ?? 'null',
    producerSub: fields.s ?? '',
  };
}
