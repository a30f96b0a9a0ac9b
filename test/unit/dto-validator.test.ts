import 'reflect-metadata';
import { Exclude, Transform, Type } from 'class-transformer';
import { IsBoolean, IsDefined, IsIn, IsInt, IsNumber, IsOptional, IsString, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { RequestValidationError, validateDto, type ValidationIssue } from '../../src/validation/dto-validator.js';

class SftRequest {
  @IsString() @MaxLength(5) tts_text!: string;
  @IsString() @IsIn(['alto', 'tenor']) spk_id!: string;
  @IsOptional() @IsNumber() speed?: number;
}

class Pitch {
  @IsNumber() @Min(50) hz!: number;
}

class Voice {
  @IsString() name!: string;
  @ValidateNested() @Type(() => Pitch) pitch!: Pitch;
}

class Segment {
  @IsString() text!: string;
}

class Tuning2 {
  @IsNumber({}, { each: true }) x!: number[];
}

class Script {
  @IsDefined() @ValidateNested() @Type(() => Voice) voice!: Voice;
  @ValidateNested({ each: true }) @Type(() => Segment) segments!: Segment[];
}

class PageQuery {
  @IsInt() @Min(1) page!: number;
  @IsOptional() @IsBoolean() verbose?: boolean;
  @IsOptional() @IsString() q?: string;
}

class ItemParams {
  @IsInt() @Max(1000) id!: number;
}

async function issues(dto: new () => object, plain: unknown, location: 'body' | 'query' | 'path', strings?: boolean): Promise<readonly ValidationIssue[]> {
  try {
    await validateDto(dto, plain, location, strings);
  } catch (err) {
    expect(err).toBeInstanceOf(RequestValidationError);
    expect((err as RequestValidationError).statusCode).toBe(422);
    return (err as RequestValidationError).detail;
  }
  throw new Error('expected a validation error');
}

describe('validateDto on JSON bodies', () => {
  it('returns an instance of the DTO with the valid values', async () => {
    const value = await validateDto<SftRequest>(SftRequest, { tts_text: 'hi', spk_id: 'alto', speed: 1.5 }, 'body');
    expect(value).toBeInstanceOf(SftRequest);
    expect({ ...value }).toEqual({ tts_text: 'hi', spk_id: 'alto', speed: 1.5 });
  });

  it('leaves a getter of the DTO alone when the body has a key of its name, as plainToInstance does', async () => {
    class Loud {
      @IsString() text!: string;
      get loud(): string {
        return this.text.toUpperCase();
      }
    }
    const value = await validateDto<Loud>(Loud, { text: 'hi', loud: 'sent' }, 'body');
    expect(value).toBeInstanceOf(Loud);
    expect(value.loud).toBe('HI');
  });

  it('strips properties the DTO does not declare', async () => {
    const value = await validateDto<SftRequest>(SftRequest, { tts_text: 'hi', spk_id: 'alto', admin: true }, 'body');
    expect(Object.keys(value).sort()).toEqual(['spk_id', 'tts_text']);
  });

  it("reports each missing field as FastAPI does: 'Field required', type 'missing', without input", async () => {
    expect(await issues(SftRequest, {}, 'body')).toEqual([
      { loc: ['body', 'tts_text'], msg: 'Field required', type: 'missing' },
      { loc: ['body', 'spk_id'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('reports a wrong type as the field\'s one issue, as pydantic does, and a failed constraint with its type, message and the input', async () => {
    expect(await issues(SftRequest, { tts_text: 123, spk_id: 'bass', speed: 'fast' }, 'body')).toEqual([
      { loc: ['body', 'tts_text'], msg: 'tts_text must be a string', type: 'isString', input: 123 },
      { loc: ['body', 'spk_id'], msg: 'spk_id must be one of the following values: alto, tenor', type: 'isIn', input: 'bass' },
      { loc: ['body', 'speed'], msg: 'speed must be a number conforming to the specified constraints', type: 'isNumber', input: 'fast' },
    ]);
  });

  it('does not convert JSON strings to numbers: JSON has its own types', async () => {
    const detail = await issues(SftRequest, { tts_text: 'hi', spk_id: 'alto', speed: '1.5' }, 'body');
    expect(detail).toEqual([
      { loc: ['body', 'speed'], msg: 'speed must be a number conforming to the specified constraints', type: 'isNumber', input: '1.5' },
    ]);
  });

  it('reports null for a required field as a wrong type, not as missing', async () => {
    const detail = await issues(SftRequest, { tts_text: null, spk_id: 'alto' }, 'body');
    expect(detail).toContainEqual({ loc: ['body', 'tts_text'], msg: 'tts_text must be a string', type: 'isString', input: null });
    expect(detail.some((d) => d.type === 'missing')).toBe(false);
  });

  it('builds the loc path through nested DTOs and list indexes', async () => {
    const detail = await issues(
      Script,
      { voice: { name: 'a', pitch: { hz: 10 } }, segments: [{ text: 'ok' }, { text: 5 }, {}] },
      'body',
    );
    expect(detail).toEqual([
      { loc: ['body', 'voice', 'pitch', 'hz'], msg: 'hz must not be less than 50', type: 'min', input: 10 },
      { loc: ['body', 'segments', 1, 'text'], msg: 'text must be a string', type: 'isString', input: 5 },
      { loc: ['body', 'segments', 2, 'text'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('reports a missing nested object (declared @IsDefined) as a missing field', async () => {
    expect(await issues(Script, { segments: [] }, 'body')).toEqual([{ loc: ['body', 'voice'], msg: 'Field required', type: 'missing' }]);
  });

  it('turns nested plain objects into their DTO classes', async () => {
    const value = await validateDto<Script>(Script, { voice: { name: 'a', pitch: { hz: 60 } }, segments: [{ text: 'x' }] }, 'body');
    expect(value.voice).toBeInstanceOf(Voice);
    expect(value.voice.pitch).toBeInstanceOf(Pitch);
    expect(value.segments[0]).toBeInstanceOf(Segment);
  });

  it('keeps what class-transformer would do on DTOs without its decorators: constructor defaults, plain nested values', async () => {
    class Tuning {
      @IsOptional() @IsNumber() temperature = 0.7;
      @IsNumber({}, { each: true }) x!: number[];
      @IsOptional() extra?: { depth: number };
    }
    const value = await validateDto<Tuning>(Tuning, { x: [1, 2.5], extra: { depth: 2 } }, 'body');
    expect(value).toBeInstanceOf(Tuning);
    expect(value).toEqual(Object.assign(new Tuning(), { x: [1, 2.5], extra: { depth: 2 } }));
    expect(await issues(Tuning, { x: [1, 'a'] }, 'body')).toEqual([
      { loc: ['body', 'x'], msg: 'each value in x must be a number conforming to the specified constraints', type: 'isNumber', input: [1, 'a'] },
    ]);
  });

  it('still applies @Transform and @Exclude, and never takes a prototype from the input', async () => {
    class Shout {
      @IsString() @Transform(({ value }) => String(value).toUpperCase()) text!: string;
      @IsOptional() @Exclude() secret?: string;
    }
    const value = await validateDto<Shout>(Shout, { text: 'hi', secret: 's' }, 'body');
    expect(value.text).toBe('HI');
    expect(value.secret).toBeUndefined();
    const polluted = await validateDto<Tuning2>(Tuning2, JSON.parse('{"x": [1], "__proto__": {"polluted": true}}'), 'body');
    expect(Object.getPrototypeOf(polluted)).toBe(Tuning2.prototype);
    expect((polluted as unknown as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('decides per request from the keys sent, and keeps the class-level answer for later requests', async () => {
    class Optional {
      @IsOptional() @ValidateNested() @Type(() => Pitch) pitch?: Pitch;
      @IsOptional() @IsString() note?: string;
    }
    const plain = await validateDto<Optional>(Optional, { note: 'a' }, 'body');
    expect(plain).toEqual(Object.assign(new Optional(), { note: 'a' }));
    const nested = await validateDto<Optional>(Optional, { pitch: { hz: 60 } }, 'body');
    expect(nested.pitch).toBeInstanceOf(Pitch);
    class Hidden {
      @IsOptional() @Exclude() secret?: string;
    }
    for (const secret of ['a', 'b']) expect((await validateDto<Hidden>(Hidden, { secret }, 'body')).secret).toBeUndefined();
  });

  it.each([
    ['an array', [1, 2]],
    ['a string', 'text'],
    ['a number', 42],
    ['null', null],
  ])('answers a body that is %s with one issue at the location itself', async (_, body) => {
    expect(await issues(SftRequest, body, 'body')).toEqual([
      { loc: ['body'], msg: 'Input should be a valid object', type: 'model_attributes_type', input: body },
    ]);
  });

  it('sums the issues up in the error message', async () => {
    const err = await validateDto(SftRequest, { spk_id: 'alto' }, 'body').catch((e: unknown) => e);
    expect((err as Error).message).toBe('body.tts_text: Field required');
    expect((err as Error).name).toBe('RequestValidationError');
  });
});

describe('validateDto on query, path and form values (strings)', () => {
  it('converts numeric strings to the declared number type', async () => {
    const value = await validateDto<PageQuery>(PageQuery, { page: '3', q: 'cat' }, 'query');
    expect(value).toEqual(Object.assign(new PageQuery(), { page: 3, q: 'cat' }));
    const params = await validateDto<ItemParams>(ItemParams, { id: '17' }, 'path');
    expect(params.id).toBe(17);
  });

  it.each([
    ['true', true],
    ['false', false],
    ['1', true],
    ['0', false],
    ['on', true],
    ['off', false],
    ['yes', true],
    ['no', false],
  ])("reads the boolean string '%s' as %s, as FastAPI does", async (text, expected) => {
    const value = await validateDto<PageQuery>(PageQuery, { page: '1', verbose: text }, 'query');
    expect(value.verbose).toBe(expected);
  });

  it('rejects a string that is no boolean instead of calling it true', async () => {
    expect(await issues(PageQuery, { page: '1', verbose: 'maybe' }, 'query')).toEqual([
      { loc: ['query', 'verbose'], msg: 'verbose must be a boolean value', type: 'isBoolean', input: 'maybe' },
    ]);
  });

  it('reports the string the client sent, not the failed conversion, with loc "query" or "path"', async () => {
    expect(await issues(PageQuery, { page: 'abc' }, 'query')).toEqual([
      { loc: ['query', 'page'], msg: 'page must be an integer number', type: 'isInt', input: 'abc' },
    ]);
    expect(await issues(ItemParams, { id: '5000' }, 'path')).toEqual([
      { loc: ['path', 'id'], msg: 'id must not be greater than 1000', type: 'max', input: '5000' },
    ]);
  });

  it('reports a missing query parameter as missing', async () => {
    expect(await issues(PageQuery, {}, 'query')).toEqual([{ loc: ['query', 'page'], msg: 'Field required', type: 'missing' }]);
  });

  it('rejects a file sent for a string form field instead of reading it as "[object Object]"', async () => {
    const file = { filename: 'a.txt', mimetype: 'text/plain', encoding: '7bit', data: Buffer.from('hi') };
    expect(await issues(SftRequest, { tts_text: file, spk_id: 'alto' }, 'body', true)).toEqual([
      { loc: ['body', 'tts_text'], msg: 'tts_text must be a string', type: 'isString', input: { filename: 'a.txt', mimetype: 'text/plain', size: 2 } },
    ]);
  });

  it('converts multipart form fields when asked to, keeping loc "body"', async () => {
    const value = await validateDto<SftRequest>(SftRequest, { tts_text: 'hi', spk_id: 'alto', speed: '1.5' }, 'body', true);
    expect(value.speed).toBe(1.5);
    expect(await issues(SftRequest, { tts_text: 'hi', spk_id: 'alto', speed: 'fast' }, 'body', true)).toEqual([
      { loc: ['body', 'speed'], msg: 'speed must be a number conforming to the specified constraints', type: 'isNumber', input: 'fast' },
    ]);
  });
});

describe('validateDto with async constraints', () => {
  it('still runs async constraints (they take the async path)', async () => {
    const { ValidatorConstraint, Validate } = await import('class-validator');
    @ValidatorConstraint({ name: 'notTaken', async: true })
    class NotTaken {
      async validate(value: unknown): Promise<boolean> {
        await new Promise((r) => setTimeout(r, 1));
        return value !== 'taken';
      }
      defaultMessage(): string {
        return 'name is taken';
      }
    }
    class Signup {
      @Validate(NotTaken) name!: string;
    }
    const err = await validateDto(Signup, { name: 'taken' }, 'body').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestValidationError);
    expect((err as RequestValidationError).detail).toEqual([{ loc: ['body', 'name'], msg: 'name is taken', type: 'notTaken', input: 'taken' }]);
    await expect(validateDto(Signup, { name: 'free' }, 'body')).resolves.toMatchObject({ name: 'free' });
  });
});
