import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  Allow,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { describe, expect, it } from 'vitest';
import { dtoSchemaCheck } from '../../src/validation/dto-schema-check.js';
import { RequestValidationError, validateDto, type RequestLocation } from '../../src/validation/dto-validator.js';

class Echo {
  @IsString() @MaxLength(5) text!: string;
  @IsInt() @Min(0) @Max(100) n!: number;
}

class Voice {
  @IsString() @IsIn(['alto', 'tenor']) spk_id!: string;
  @IsOptional() @IsNumber() @Min(0.25) speed?: number;
  @IsOptional() @IsBoolean() stream?: boolean;
  // A default class-validator checks on the instance even when the field is not sent.
  @IsOptional() @IsInt() @Max(5) level: number = 10;
  @Allow() note?: unknown;
}

/**
 * The same DTOs with one decorator the compiled check does not map (a ValidateIf that always
 * validates, on a property no input sends), so class-validator alone answers for them.
 */
class EchoByClassValidator extends Echo {
  @ValidateIf(() => true) @Allow() unmapped?: unknown;
}
class VoiceByClassValidator extends Voice {
  @ValidateIf(() => true) @Allow() unmapped?: unknown;
}

type Outcome = { ok: Record<string, unknown> } | { body: string };

async function outcome(dto: new () => object, plain: unknown, location: RequestLocation): Promise<Outcome> {
  try {
    return { ok: { ...(await validateDto<object>(dto, plain, location)) } };
  } catch (err) {
    if (!(err instanceof RequestValidationError)) throw err;
    return { body: JSON.stringify({ detail: err.detail }) };
  }
}

describe('dtoSchemaCheck', () => {
  it('compiles a check for DTOs whose decorators all have a JSON Schema equivalent', () => {
    expect(dtoSchemaCheck(Echo)).toBeTypeOf('function');
    expect(dtoSchemaCheck(Voice)).toBeTypeOf('function');
    expect([...dtoSchemaCheck(Voice)!.declared].sort()).toEqual(['level', 'note', 'speed', 'spk_id', 'stream']);
  });

  it('leaves DTOs with any other decorator or option to class-validator', () => {
    class Nested {
      @ValidateNested() @Type(() => Echo) echo!: Echo;
    }
    class Each {
      @IsString({ each: true }) words!: string[];
    }
    class Shortest {
      @IsString() @MinLength(1) text!: string;
    }
    class Decimals {
      @IsNumber({ maxDecimalPlaces: 2 }) price!: number;
    }
    class Defined {
      @IsDefined() value!: unknown;
    }
    class Grouped {
      @IsString({ groups: ['admin'] }) text!: string;
    }
    for (const dto of [Nested, Each, Shortest, Decimals, Defined, Grouped, EchoByClassValidator, VoiceByClassValidator]) {
      expect(dtoSchemaCheck(dto), dto.name).toBeUndefined();
    }
  });

  it('accepts an instance only when class-validator would', () => {
    class Count {
      @IsInt() n!: number;
    }
    expect(dtoSchemaCheck(Count)!(Object.assign(new Count(), { n: Number.POSITIVE_INFINITY }))).toBe(false);
    const check = dtoSchemaCheck(Echo)!;
    expect(check(Object.assign(new Echo(), { text: 'hi', n: 3 }))).toBe(true);
    expect(check(Object.assign(new Echo(), { text: 'hi', n: Number.POSITIVE_INFINITY }))).toBe(false);
    expect(check(Object.assign(new Echo(), { text: 'hi', n: Number.NaN }))).toBe(false);
    expect(check(Object.assign(new Echo(), { text: 'hi' }))).toBe(false);
  });
});

const cases: readonly [string, new () => object, new () => object, unknown, RequestLocation][] = [
  ['valid', Echo, EchoByClassValidator, { text: 'hi', n: 3 }, 'body'],
  ['undeclared keys', Echo, EchoByClassValidator, { text: 'hi', n: 0, admin: true }, 'body'],
  ['empty object', Echo, EchoByClassValidator, {}, 'body'],
  ['wrong types', Echo, EchoByClassValidator, { text: 5, n: '5' }, 'body'],
  ['nulls', Echo, EchoByClassValidator, { text: null, n: null }, 'body'],
  ['not an integer', Echo, EchoByClassValidator, { text: 'hi', n: 1.5 }, 'body'],
  ['boolean for an integer', Echo, EchoByClassValidator, { text: 'hi', n: true }, 'body'],
  ['below the minimum', Echo, EchoByClassValidator, { text: 'hi', n: -1 }, 'body'],
  ['above the maximum', Echo, EchoByClassValidator, { text: 'hi', n: 1e300 }, 'body'],
  ['too long', Echo, EchoByClassValidator, { text: 'abcdef', n: 100 }, 'body'],
  ['surrogate pairs within the length', Echo, EchoByClassValidator, { text: '😀😀😀😀😀', n: 1 }, 'body'],
  ['variation selectors within the length', Echo, EchoByClassValidator, { text: '❤️❤️❤️❤️❤️', n: 1 }, 'body'],
  ['an array', Echo, EchoByClassValidator, [], 'body'],
  ['query strings converted', Echo, EchoByClassValidator, { text: 'hi', n: '7' }, 'query'],
  ['query NaN', Echo, EchoByClassValidator, { text: 'hi', n: 'abc' }, 'query'],
  ['query Infinity', Echo, EchoByClassValidator, { text: 'hi', n: 'Infinity' }, 'query'],
  ['enum and optional fields', Voice, VoiceByClassValidator, { spk_id: 'alto', speed: 1, stream: false, level: 2 }, 'body'],
  ['optional nulls', Voice, VoiceByClassValidator, { spk_id: 'tenor', speed: null, stream: null, level: null }, 'body'],
  ['a default that fails', Voice, VoiceByClassValidator, { spk_id: 'alto' }, 'body'],
  ['not in the enum', Voice, VoiceByClassValidator, { spk_id: 'bass', speed: 0.1, stream: 'yes', level: 1 }, 'body'],
  ['any value where only allowed', Voice, VoiceByClassValidator, { spk_id: 'alto', level: 1, note: { any: [1] } }, 'body'],
  ['query booleans', Voice, VoiceByClassValidator, { spk_id: 'alto', stream: 'true', level: '3' }, 'query'],
  ['query number Infinity', Voice, VoiceByClassValidator, { spk_id: 'alto', speed: 'Infinity', level: '3' }, 'query'],
  ['query number NaN', Voice, VoiceByClassValidator, { spk_id: 'alto', speed: 'abc', level: '3' }, 'query'],
  ['query boolean that is none', Voice, VoiceByClassValidator, { spk_id: 'alto', stream: 'maybe', level: '3' }, 'query'],
];

describe('validateDto with and without the compiled check', () => {
  it.each(cases)('gives the same value or the same 422 body: %s', async (_name, fast, reference, plain, location) => {
    expect(await outcome(fast, plain, location)).toEqual(await outcome(reference, plain, location));
  });
});
