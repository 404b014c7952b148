/**
 * Finds the runtime container behind `{namespace}/{pod}/{container}` on this node, the way the kubelet's
 * streaming endpoints name containers. The control plane usually passes the exact container ID it read from
 * the pod's status (current or, for `--previous`, the last terminated one); the ID is only accepted if the
 * container's labels say it is that pod's container on this node, so a caller cannot reach other containers
 * by ID. Without an ID the newest instance (or, for previous, the one before it) is chosen by labels.
 */
import { ApiError, errors } from '../../src/api/errors.js';
import { identityFromLabels, LABEL_CONTAINER_NAME, LABEL_CONTAINER_TYPE, LABEL_POD_NAME, LABEL_POD_NAMESPACE, labelFilter } from '../node/labels.js';
import type { ContainerInfo, ContainerRuntime, ContainerSummary } from '../runtime/runtime.js';

export interface ContainerQuery {
  nodeName: string;
  namespace: string;
  pod: string;
  container: string;
  /** restricts to this pod instance (a pod deleted and recreated under the same name has a new uid) */
  podUID?: string;
  /** `docker://<id>` or a bare id, as in containerStatuses[].containerID */
  containerID?: string;
  /** the instance before the current one */
  previous?: boolean;
}

function bareId(containerID: string): string {
  const i = containerID.indexOf('://');
  return i >= 0 ? containerID.slice(i + 3) : containerID;
}

function matches(info: Pick<ContainerInfo, 'labels'>, q: ContainerQuery): boolean {
  const id = identityFromLabels(info.labels);
  if (!id || id.type === 'infra') return false;
  return id.nodeName === q.nodeName && id.podNamespace === q.namespace && id.podName === q.pod && id.containerName === q.container && (!q.podUID || id.podUid === q.podUID);
}

/** The container, inspected; throws NotFound / BadRequest ApiErrors the endpoint reports as Status. */
export async function findContainer(runtime: ContainerRuntime, q: ContainerQuery): Promise<ContainerInfo> {
  if (q.containerID) {
    const info = /^[0-9a-f]{12,64}$/i.test(bareId(q.containerID)) ? await runtime.inspect(bareId(q.containerID)) : undefined;
    if (!info || !matches(info, q)) throw errors.notFound({ resource: 'containers', name: q.container });
    return info;
  }
  const listed = await runtime.list({ labels: [...labelFilter({ nodeName: q.nodeName, podUid: q.podUID }), `${LABEL_POD_NAMESPACE}=${q.namespace}`, `${LABEL_POD_NAME}=${q.pod}`, `${LABEL_CONTAINER_NAME}=${q.container}`] });
  let instances = listed.filter((c) => matches(c, q));
  if (!q.podUID && instances.length) {
    // Leftovers of an earlier pod with the same name may still exist: keep the newest pod's.
    const newest = instances.reduce((a, b) => (b.createdAt > a.createdAt ? b : a));
    const uid = identityFromLabels(newest.labels)!.podUid;
    instances = instances.filter((c) => identityFromLabels(c.labels)!.podUid === uid);
  }
  instances.sort((a, b) => identityFromLabels(b.labels)!.restartCount - identityFromLabels(a.labels)!.restartCount || b.createdAt - a.createdAt);
  const pick = instances[q.previous ? 1 : 0];
  if (!pick) {
    if (q.previous) throw errors.badRequest(`previous terminated container "${q.container}" in pod "${q.pod}" not found`);
    throw errors.notFound({ resource: 'containers', name: q.container });
  }
  const info = await runtime.inspect(pick.id);
  if (!info) throw errors.notFound({ resource: 'containers', name: q.container });
  return info;
}

/**
 * The running infra (pause) container of `{namespace}/{pod}` on this node, which holds the pod's network
 * namespace; the newest one when several attempts exist. NotFound ("pod does not exist", the kubelet's words)
 * when there is none, BadRequest when it is not running.
 */
export async function findInfraContainer(runtime: ContainerRuntime, q: { nodeName: string; namespace: string; pod: string; podUID?: string }): Promise<ContainerInfo> {
  const listed = await runtime.list({ labels: [...labelFilter({ nodeName: q.nodeName, podUid: q.podUID }), `${LABEL_POD_NAMESPACE}=${q.namespace}`, `${LABEL_POD_NAME}=${q.pod}`, `${LABEL_CONTAINER_TYPE}=infra`] });
  const instances = listed.filter((c) => {
    const id = identityFromLabels(c.labels);
    return id?.type === 'infra' && id.nodeName === q.nodeName && id.podNamespace === q.namespace && id.podName === q.pod && (!q.podUID || id.podUid === q.podUID);
  });
  const running = instances.filter((c) => c.state === 'running');
  const pick = (running.length ? running : instances).reduce<ContainerSummary | undefined>((a, b) => (!a || b.createdAt > a.createdAt ? b : a), undefined);
  if (!pick) throw new ApiError('NotFound', 'pod does not exist');
  const info = await runtime.inspect(pick.id);
  if (!info) throw new ApiError('NotFound', 'pod does not exist');
  if (info.state !== 'running') throw errors.badRequest(`pod ${q.pod} is not running: its sandbox is ${info.state}`);
  return info;
}
