import { IsInt, IsString, MaxLength, MinLength } from 'class-validator';
import { Batch, Endpoint, Model, type ModelContext } from 'serve-fn';

export class PredictRequest {
  @IsString() @MinLength(1) @MaxLength(1000) text!: string;
}

/** Documents the answer and, like FastAPI's response_model, sends only these fields. */
export class PredictResponse {
  @IsInt() words!: number;
  @IsString() longest!: string;
  @IsInt() instance!: number;
}

/** Counts the words of each text and finds the longest one: replace the body of predict with your model. */
@Model({ name: '{{modelName}}', version: '1', description: '{{name}}: a serve-fn model' })
export class {{className}} {
  private instance = -1;

  async initialize(ctx: ModelContext): Promise<void> {
    // Load weights here: this runs once in each instance's worker thread.
    this.instance = ctx.instanceIndex;
  }

  @Endpoint('/predict', { body: PredictRequest, response: PredictResponse, summary: 'Count the words of a text' })
  @Batch(16, 2000)
  async predict(batch: PredictRequest[]): Promise<PredictResponse[]> {
    return batch.map(({ text }) => {
      const words = text.split(/\s+/).filter((w) => w.length > 0);
      const longest = words.reduce((best, w) => (w.length > best.length ? w : best), '');
      return { words: words.length, longest, instance: this.instance };
    });
  }

  async finalize(): Promise<void> {
    this.instance = -1;
  }
}
