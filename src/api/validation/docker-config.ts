/**
 * The pull-credential Secrets' payloads as kube-apiserver validates them: `.dockerconfigjson` (type
 * kubernetes.io/dockerconfigjson) and `.dockercfg` (kubernetes.io/dockercfg) must be present and decode
 * into a JSON object, the map the kubelet's keyring reads. A refusal names `data[<key>]` and never
 * quotes the value.
 */
import type { FieldError } from '../errors.js';
import { fieldErrors, key } from '../validation.js';

const REDACTED = '<secret contents redacted>';

/** Problems with `data[dataKey]` (base64 as stored) of a docker config Secret; none when it is usable. */
export function validateDockerConfigKey(data: Record<string, string>, dataKey: '.dockerconfigjson' | '.dockercfg'): FieldError[] {
  const path = key('data', dataKey);
  if (!(dataKey in data)) return [fieldErrors.required(path, '')];
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(data[dataKey]!, 'base64').toString('utf8'));
  } catch {
    // The parser's own message quotes the input; the value is secret, so say only what is wrong.
    return [fieldErrors.invalid(path, REDACTED, 'must be valid JSON')];
  }
  // Go's decoding into a map takes an object or null, nothing else.
  if (parsed !== null && (typeof parsed !== 'object' || Array.isArray(parsed))) {
    return [fieldErrors.invalid(path, REDACTED, 'must be a JSON object')];
  }
  return [];
}
