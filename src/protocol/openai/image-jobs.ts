import { randomUUID } from 'node:crypto';
import { createError } from '../../errors/index.js';

/** A job's states, as OpenAI's /v1/videos names them (openai-python src/openai/types/video.py). */
export type JobStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled';

/** How long a job and its images are kept after it ends. */
export const JOB_TTL_S = 3600;

export interface ImageJob {
  readonly id: string;
  readonly model: string;
  readonly createdAt: number;
  status: JobStatus;
  /** Percent of the denoising steps done. */
  progress: number;
  completedAt?: number;
  error?: { readonly code: string; readonly message: string };
  images?: { readonly bytes: Buffer; readonly contentType: string }[];
  readonly abort: AbortController;
}

/**
 * Slow image requests as jobs, modelled on OpenAI's /v1/videos: submitted, polled
 * (`queued` → `in_progress` → `completed` / `failed` / `cancelled`), their content fetched, and
 * deleted (which cancels a running job at its next denoising step). Kept in memory, JOB_TTL_S after they end.
 */
export class ImageJobs {
  private readonly jobs = new Map<string, ImageJob>();

  create(model: string): ImageJob {
    this.sweep();
    const job: ImageJob = { id: `imgjob-${randomUUID()}`, model, createdAt: Math.floor(Date.now() / 1000), status: 'queued', progress: 0, abort: new AbortController() };
    this.jobs.set(job.id, job);
    return job;
  }

  /** Throws SF_ERR_DIFFUSION_JOB_UNKNOWN (404). */
  get(id: string): ImageJob {
    const job = this.jobs.get(id);
    if (!job) throw createError('SF_ERR_DIFFUSION_JOB_UNKNOWN', id, JOB_TTL_S);
    return job;
  }

  /** Cancels the job if it has not ended, and forgets it. */
  delete(id: string): ImageJob {
    const job = this.get(id);
    if (job.status === 'queued' || job.status === 'in_progress') {
      job.status = 'cancelled';
      job.abort.abort();
    }
    this.jobs.delete(id);
    return job;
  }

  private sweep(): void {
    const limit = Math.floor(Date.now() / 1000) - JOB_TTL_S;
    for (const [id, job] of this.jobs) if (job.completedAt !== undefined && job.completedAt < limit) this.jobs.delete(id);
  }
}

/** A job as the API shows it (the shape of OpenAI's Video object, `object: "image.job"`). */
export function jobObject(job: ImageJob): Record<string, unknown> {
  return {
    id: job.id, object: 'image.job', model: job.model, status: job.status, progress: job.progress, created_at: job.createdAt,
    completed_at: job.completedAt ?? null, expires_at: job.completedAt === undefined ? null : job.completedAt + JOB_TTL_S, error: job.error ?? null,
  };
}
