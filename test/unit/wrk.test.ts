import { describe, expect, it } from 'vitest';
import { parseWrk } from '../../bench/lib/wrk.js';

const REPORT = `Running 10s test @ http://127.0.0.1:8452/infer
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    84.61ms   12.07ms 158.99ms   72.81%
    Req/Sec   378.02     61.06   525.00     70.00%
  Latency Distribution
     50%   83.50ms
     75%   91.06ms
     90%  100.07ms
     99%    1.12s
  7531 requests in 10.01s, 1.36MB read
  Non-2xx or 3xx responses: 12
  Socket errors: connect 0, read 2, write 0, timeout 3
Requests/sec:    752.35
Transfer/sec:    139.38KB
`;

describe('parseWrk', () => {
  it('reads the rate, the --latency percentiles in ms whatever unit wrk printed, non-2xx answers and socket errors', () => {
    expect(parseWrk(REPORT)).toEqual({ rps: 752.35, p50Ms: 83.5, p99Ms: 1120, non2xx: 12, errors: 5 });
  });

  it('reads microseconds, and zero failures when wrk printed no failure lines', () => {
    const quick = REPORT.replace('83.50ms', '512.00us').replace(/ {2}Non-2xx.*\n {2}Socket.*\n/, '');
    expect(parseWrk(quick)).toMatchObject({ p50Ms: 0.512, non2xx: 0, errors: 0 });
  });

  it('throws with the report when wrk printed no rate (it could not connect)', () => {
    expect(() => parseWrk('unable to connect to 127.0.0.1:1 Connection refused\n')).toThrow(/no Requests\/sec:\nunable to connect/);
  });
});
