/** The ApiError a promise rejects with; fails the test when it resolves or rejects with anything else. */
import assert from 'node:assert/strict';
import { ApiError } from '../../src/api/errors.js';

export async function refusal(p: Promise<unknown>, accepted = 'the request was accepted'): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiError, String(e));
    return e;
  }
  assert.fail(accepted);
}
