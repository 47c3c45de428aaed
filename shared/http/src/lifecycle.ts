import type { Gauge } from 'prom-client';

/** Returns undefined when healthy, else a short reason shown on /readyz. */
export type ReadinessCheck = () => string | undefined | Promise<string | undefined>;
/** Work to finish before exit, given the time it may take (the hub spreads stream closes over it). */
export type DrainHook = (deadline: number) => Promise<void>;

/** How often readiness is evaluated on its own, so `herald_ready` is right without probes. */
export const READINESS_INTERVAL_MS = 5000;

/**
 * Readiness and shutdown state of one node. Draining flips readiness off first so the load
 * balancer stops routing here before anything is closed (issue: platform, graceful shutdown).
 */
export class Lifecycle {
  private readonly checks = new Map<string, ReadinessCheck>();
  private readonly drainHooks: DrainHook[] = [];
  private drainingSince: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** A timed evaluation is under way: a slow check is not piled up by the next tick. */
  private ticking = false;

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

  /**
   * Evaluates readiness now and every `intervalMs` until `stopWatching()`: `herald_ready` is
   * a gauge scraped on /metrics, and a node nobody probes (no Kubernetes probe, a plain
   * Prometheus scrape) would otherwise report the value of its last /readyz forever
   * (issue #9: HeraldHubNotReady fired on healthy nodes). The timer does not hold the process.
   */
  startWatching(intervalMs: number = READINESS_INTERVAL_MS): void {
    if (this.timer) return;
    const tick = () => {
      if (this.ticking) return;
      this.ticking = true;
      void this.readiness().finally(() => {
        this.ticking = false;
      });
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  stopWatching(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reasons this node is not ready; empty when ready. Updates `herald_ready`. */
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
    // Checked again: a drain that began while the checks ran must not be overwritten with 1.
    this.readyGauge?.set(reasons.length === 0 && !this.draining ? 1 : 0);
    return reasons;
  }

  /** Marks the node draining and runs the drain hooks; resolves when they finish. */
  async drain(deadline: number): Promise<void> {
    if (this.drainingSince === undefined) this.drainingSince = Date.now();
    this.readyGauge?.set(0);
    await Promise.all(this.drainHooks.map((hook) => hook(deadline)));
  }
}
