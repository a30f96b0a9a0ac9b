import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startCli, type RunningCli } from './cli-harness.js';

/**
 * A project laid out as `npm install` leaves it when package.json says `"serve-fn": "file:..."` and
 * the user also installs tsyringe: node_modules/serve-fn links to the package, and tsyringe is the
 * project's own copy. Other packages link to the repository's installs, as npm would hoist them.
 */
const MODEL = `
import { IsBoolean, IsString } from 'class-validator';
import { container as ownContainer } from 'tsyringe';
import { container, Endpoint, inject, injectable, Model, type ModelContext } from 'serve-fn';

const GREETING = 'greeting';
container.register(GREETING, { useValue: 'hello from the user container' });

@injectable()
class Punctuation {
  constructor(@inject(GREETING) readonly greeting: string) {}
  mark(text: string): string {
    return text + '!';
  }
}

class GreetRequest {
  @IsString() name!: string;
}

class Greeting {
  @IsString() text!: string;
  @IsBoolean() ownTsyringeIsAnotherCopy!: boolean;
  @IsString() modelDir!: string;
}

@Model({ name: 'greeter' })
export class Greeter {
  private modelDir = '';

  constructor(@inject(GREETING) private readonly greeting: string, private readonly punctuation: Punctuation) {}

  initialize(ctx: ModelContext): void {
    this.modelDir = ctx.modelDir;
  }

  @Endpoint('/greet', { body: GreetRequest, response: Greeting })
  greet(req: GreetRequest): Greeting {
    const text = this.punctuation.mark(this.greeting + ', ' + req.name);
    return { text, ownTsyringeIsAnotherCopy: ownContainer !== container, modelDir: this.modelDir };
  }
}
`;

describe('a project that installs serve-fn by file: next to its own tsyringe', () => {
  const project = realpathSync(mkdtempSync(join(tmpdir(), 'serve-fn-user-')));
  let cli: RunningCli;

  beforeAll(async () => {
    const modules = join(project, 'node_modules');
    mkdirSync(modules);
    symlinkSync(REPO_ROOT, join(modules, 'serve-fn'), 'dir');
    cpSync(join(REPO_ROOT, 'node_modules', 'tsyringe'), join(modules, 'tsyringe'), { recursive: true });
    for (const name of ['class-validator', 'reflect-metadata']) symlinkSync(join(REPO_ROOT, 'node_modules', name), join(modules, name), 'dir');
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', dependencies: { 'serve-fn': `file:${REPO_ROOT}`, tsyringe: '4.10.0' } }));
    mkdirSync(join(project, 'src'));
    writeFileSync(join(project, 'src', 'greeter.model.ts'), MODEL);
    writeFileSync(join(project, 'index.ts'), "export { Greeter } from './src/greeter.model.js';\n");
    cli = await startCli(['start', project]);
    await cli.waitForOutput(/serve-fn ready/, 60_000);
  }, 90_000);

  afterAll(async () => {
    await cli?.stop();
    rmSync(project, { recursive: true, force: true });
  });

  it("registers and injects through serve-fn's container, re-exported by serve-fn", async () => {
    const res = await fetch(`${cli.base}/greet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ada' }) });
    expect(res.status, cli.output()).toBe(200);
    expect(await res.json()).toMatchObject({ text: 'hello from the user container, ada!', ownTsyringeIsAnotherCopy: true });
  });

  it('gives the model the entry\'s folder as modelDir, not the folder of the file that declares it', async () => {
    const res = await fetch(`${cli.base}/greet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ada' }) });
    expect(((await res.json()) as { modelDir: string }).modelDir).toBe(project);
  });
});

/** A nested DTO written as the README shows it, in a project that installs class-validator but not class-transformer. */
const NESTED_MODEL = `
import { ArrayMaxSize, IsNumber, IsString, ValidateNested } from 'class-validator';
import { Endpoint, Model, Type } from 'serve-fn';

class TopicScore {
  @IsString() topic!: string;
  @IsNumber() score!: number;
  percent(): number {
    return Math.round(this.score * 100);
  }
}

class RankRequest {
  @ValidateNested() @ArrayMaxSize(8) @Type(() => TopicScore) scores!: TopicScore[];
}

class RankResponse {
  @IsString() best!: string;
  @IsNumber() percent!: number;
}

@Model({ name: 'ranker' })
export class Ranker {
  @Endpoint('/rank', { body: RankRequest, response: RankResponse })
  rank(req: RankRequest): RankResponse {
    const best = [...req.scores].sort((a, b) => b.score - a.score)[0];
    return { best: best.topic, percent: best.percent() };
  }
}
`;

describe('nested DTOs in a project that has only serve-fn and class-validator', () => {
  const project = realpathSync(mkdtempSync(join(tmpdir(), 'serve-fn-nested-')));
  let cli: RunningCli;

  beforeAll(async () => {
    const modules = join(project, 'node_modules');
    mkdirSync(modules);
    symlinkSync(REPO_ROOT, join(modules, 'serve-fn'), 'dir');
    for (const name of ['class-validator', 'reflect-metadata']) symlinkSync(join(REPO_ROOT, 'node_modules', name), join(modules, name), 'dir');
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', dependencies: { 'serve-fn': `file:${REPO_ROOT}`, 'class-validator': '0.15.1' } }));
    writeFileSync(join(project, 'index.ts'), NESTED_MODEL);
    cli = await startCli(['start', project]);
    await cli.waitForOutput(/serve-fn ready/, 60_000);
  }, 90_000);

  afterAll(async () => {
    await cli?.stop();
    rmSync(project, { recursive: true, force: true });
  });

  const rank = (body: unknown) => fetch(`${cli.base}/rank`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('turns each nested item into an instance of its class', async () => {
    const res = await rank({ scores: [{ topic: 'sport', score: 0.2 }, { topic: 'music', score: 0.7 }] });
    expect(res.status, cli.output()).toBe(200);
    expect(await res.json()).toEqual({ best: 'music', percent: 70 });
  });

  it('validates each nested item, naming it in loc', async () => {
    const res = await rank({ scores: [{ topic: 'sport', score: 0.2 }, { topic: 'music', score: 'high' }] });
    expect(res.status).toBe(422);
    const { detail } = (await res.json()) as { detail: { loc: (string | number)[] }[] };
    expect(detail.map((d) => d.loc)).toEqual([['body', 'scores', 1, 'score']]);
  });

  it('documents the nested class as a component that its $ref resolves to', async () => {
    const doc = (await (await fetch(`${cli.base}/openapi.json`)).json()) as { components: { schemas: Record<string, { properties: Record<string, unknown> }> } };
    const scores = doc.components.schemas.RankRequest.properties.scores as { type: string; items: { $ref: string } };
    expect(scores.type).toBe('array');
    expect(scores.items.$ref).toBe('#/components/schemas/TopicScore');
    expect(doc.components.schemas.TopicScore.properties).toHaveProperty('score');
  });
});
