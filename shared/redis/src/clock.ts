/**
 * The time storage code reads (milliseconds since the epoch), given to it rather than read from
 * `Date.now()`, so a test can move it. Scripts get the matching clock when they are loaded
 * (`loadScripts(directory, { clock })`): Redis TIME with the system clock, a key a test writes
 * with a test clock.
 */
export interface Clock {
  now(): number;
}

/** The machine's clock: what every node runs on outside tests. */
export const systemClock: Clock = { now: () => Date.now() };
