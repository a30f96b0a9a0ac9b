import { randomUUID } from 'node:crypto';

/** How long a `response_format: "url"` image is served: OpenAI's URLs are valid for 60 minutes. */
export const IMAGE_URL_TTL_MS = 60 * 60 * 1000;
/** The most images kept at once; the oldest go first, so a burst cannot fill memory. */
const MAX_FILES = 1000;

interface StoredImage {
  readonly bytes: Buffer;
  readonly contentType: string;
  readonly expiresAt: number;
}

/** Images answered by URL, held in memory and served by GET /v1/images/files/{id} until they expire. */
export class ImageFiles {
  private readonly files = new Map<string, StoredImage>();

  constructor(private readonly nowMs: () => number = Date.now) {}

  /** Stores `bytes`; returns the file's id (with its extension, so the URL names the type). */
  put(bytes: Buffer, extension: string): string {
    this.sweep();
    while (this.files.size >= MAX_FILES) this.files.delete(this.files.keys().next().value!);
    const id = `img-${randomUUID()}.${extension}`;
    this.files.set(id, { bytes, contentType: `image/${extension}`, expiresAt: this.nowMs() + IMAGE_URL_TTL_MS });
    return id;
  }

  get(id: string): StoredImage | undefined {
    const file = this.files.get(id);
    if (file && file.expiresAt <= this.nowMs()) {
      this.files.delete(id);
      return undefined;
    }
    return file;
  }

  private sweep(): void {
    // Every file lives IMAGE_URL_TTL_MS, so insertion order is expiry order: stop at the first still valid.
    const now = this.nowMs();
    for (const [id, file] of this.files) {
      if (file.expiresAt > now) break;
      this.files.delete(id);
    }
  }
}
