import type { Gauge } from 'prom-client';

/** Returns undefined when healthy, else a short reason shown on /readyz. */
export type ReadinessCheck = () => string | undefined | Promise<string | undefined>;
/** Work to finish before exit, given the time it may take (the hub spreads stream closes over it). */
export type DrainHook = (deadline: number) => Promise<void>;

/**
 * Readiness and shutdown state of one node. Draining flips readiness off first so the load
 * balancer stops routing here before anything is closed (issue: platform, graceful shutdown).
 */
export class Lifecycle {
  private readonly checks = new Map<string, ReadinessCheck>();
  private readonly drainHooks: DrainHook[] = [];
  private drainingSince: number | undefined;

  constructor(private readonly readyGauge?: Gauge) {}

  get draining(): boolean {
    return this.drainingSince !== undefined;
  }

  addReadinessCheck(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  onDrain(hook: DrainHook): void {
    this.drainHooks.push(hook);
  }

  /** Reasons this node is not ready; empty when ready. */
  async readiness(): Promise<string[]> {
    const reasons: string[] = [];
    if (this.draining) reasons.push('draining');
    for (const [name, check] of this.checks) {
      try {
        const reason = await check();
        if (reason) reasons.push(`${name}: ${reason}`);
      } catch (error) {
        reasons.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    this.readyGauge?.set(reasons.length === 0 ? 1 : 0);
    return reasons;
  }

  /** Marks the node draining and runs the drain hooks; resolves when they finish. */
  async drain(deadline: number): Promise<void> {
    if (this.drainingSince === undefined) this.drainingSince = Date.now();
    this.readyGauge?.set(0);
    await Promise.all(this.drainHooks.map((hook) => hook(deadline)));
  }
}
