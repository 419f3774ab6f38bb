import { isConnectionError } from './read-replica.service';

describe('a read the replica could not serve, run again on the primary', () => {
  it('takes a pool that found no suitable connection (08001) for an unreachable replica', () => {
    expect(isConnectionError(Object.assign(new Error('No suitable connection from 127.0.0.1:5433'), { code: '08001' }))).toBe(true);
  });

  it('takes a server of the wrong kind behind the endpoint (25006) for one that cannot serve', () => {
    expect(isConnectionError(Object.assign(new Error('127.0.0.1:5433 is a primary, not standby (target_session_attrs)'), { code: '25006' }))).toBe(
      true,
    );
  });

  it("leaves a statement's own failure to the statement", () => {
    expect(isConnectionError(Object.assign(new Error('syntax error at or near "selec"'), { code: '42601' }))).toBe(false);
  });
});
