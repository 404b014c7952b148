/**
 * kube-apiserver's DenyServiceExternalIPs admission plugin, on with `--deny-service-external-ips`: no
 * Service may gain an externalIP. An update that keeps some of the IPs it already had (or drops
 * them) passes, so the garbage collector and users can still write older Services that have them.
 */
import { errors } from '../../api/errors.js';
import type { AdmissionPlugin } from '../chain.js';
import type { Service } from '../../api/types.js';

export function denyServiceExternalIPs(): AdmissionPlugin {
  return {
    name: 'DenyServiceExternalIPs',
    kind: 'validating',
    completeMessages: true,
    admit(attrs) {
      if (attrs.info.group !== '' || attrs.info.plural !== 'services' || attrs.subresource || attrs.operation === 'DELETE') return;
      const wanted = (attrs.object as Service).spec?.externalIPs ?? [];
      const had = new Set((attrs.oldObject as Service | undefined)?.spec?.externalIPs ?? []);
      if (wanted.every((ip) => had.has(ip))) return;
      throw errors.forbidden(`services "${attrs.object.metadata.name ?? ''}" is forbidden: Use of external IPs is denied by admission control`);
    },
  };
}
