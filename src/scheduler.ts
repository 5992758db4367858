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
  private running: Promise<void> | null = null;

  constructor(private readonly log: Logger) {}

  add(job: Job): void {
    this.jobs.push(job);
  }

  start(): void {
    this.cron = new Cron("* * * * * *", { protect: true }, () => {
      this.running = this.tick();
      return this.running;
    });
  }

  /** Runs every job that is due now; the cron calls it every second. */
  async tick(now = Date.now()): Promise<void> {
    for (const job of this.jobs) {
      // Ticks come about a second apart, a few ms early or late: allow for that jitter.
      if (now - (this.lastRun.get(job.name) ?? 0) < job.everyMs - TICK_JITTER_MS) continue;
      this.lastRun.set(job.name, now);
      try {
        await job.run(now);
      } catch (error) {
        this.log.error("job failed", {
          job: job.name,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  async stop(): Promise<void> {
    this.cron?.stop();
    await this.running;
  }
}
