/**
 * The scheduler: a croner tick every second runs the registered jobs in turn. Jobs find their
 * work in the database (due rows), so a restart loses nothing: no timer lives only in memory.
 */
import { Cron } from "croner";
import type { Logger } from "./log.ts";

const TICK_JITTER_MS = 100;

export interface Job {
  name: string;
  /** Run at most this often. */
  everyMs: number;
  run: (now: number) => Promise<void>;
}

export class Scheduler {
  private readonly jobs: Job[] = [];
  private readonly lastRun = new Map<string, number>();
  private cron: Cron | null = null;
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly log: Logger) {}

  add(job: Job): void {
    this.jobs.push(job);
  }

  start(): void {
    this.cron = new Cron("* * * * * *", () => this.tick());
  }

  /**
   * Starts every job that is due now; the cron calls it every second. Jobs run side by side, so
   * a slow webhook cannot hold up escalations; a job still running from a previous tick is
   * not started again.
   */
  tick(now = Date.now()): void {
    for (const job of this.jobs) {
      if (this.running.has(job.name)) continue;
      // Ticks come about a second apart, a few ms early or late: allow for that jitter.
      if (now - (this.lastRun.get(job.name) ?? 0) < job.everyMs - TICK_JITTER_MS) continue;
      this.lastRun.set(job.name, now);
      const run = job
        .run(now)
        .catch((error: unknown) => {
          this.log.error("job failed", {
            job: job.name,
            error: error instanceof Error ? error.message : String(error),
          });
        })
        .finally(() => this.running.delete(job.name));
      this.running.set(job.name, run);
    }
  }

  /** Stops ticking and waits for the jobs under way. */
  async stop(): Promise<void> {
    this.cron?.stop();
    await Promise.all(this.running.values());
  }
}
