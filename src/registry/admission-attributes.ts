/**
 * What admission sees of one write. The registry builds these and hands them to its `Admission`
 * (implemented by src/admission/chain.ts), so the type lives here, below admission.
 */
import type { KubeObject } from '../api/types.js';
import type { UserInfo } from '../api/user-info.js';
import type { ResourceInfo } from '../api/identities.js';

/** `object` is the object to be stored (mutable for mutating plugins). */
export interface AdmissionAttributes {
  operation: 'CREATE' | 'UPDATE' | 'DELETE';
  info: ResourceInfo;
  object: KubeObject;
  oldObject?: KubeObject;
  subresource?: string;
  dryRun: boolean;
  /** the authenticated user, when the write came over the API */
  user?: UserInfo;
  /**
   * Where plugins put warnings for the client (sent as `Warning` headers). Absent for writes no
   * client will see, such as those of in-process controllers.
   */
  warnings?: string[];
}
