/**
 * How DaemonSets, StatefulSets, ControllerRevisions and PersistentVolumeClaims look to kubectl:
 * table columns (`kubectl get`). Their OpenAPI schemas come from the generated API data.
 * Imported once for its registrations.
 */
import { labelSelectorFromObject, labelSelectorToString } from '../../api/selectors.js';
import type { KubeObject } from '../../api/types.js';
import { ageSince, registerTableColumns, type TableColumnDefinition } from '../../server/tables.js';
import type { DaemonSet, PersistentVolumeClaim, StatefulSet } from './apps-sets.js';

const col = (name: string, description: string, type = 'string', priority = 0): TableColumnDefinition => ({ name, type, format: name === 'Name' ? 'name' : '', description, priority });
const NAME = col('Name', 'Name must be unique within a namespace.');
const AGE = col('Age', 'CreationTimestamp is a timestamp representing the server time when this object was created.');

function nodeSelectorText(ds: DaemonSet): string {
  const sel = ds.spec?.template?.spec?.nodeSelector ?? {};
  const text = Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(',');
  return text || '<none>';
}

function selectorText(obj: { spec?: { selector?: unknown } }): string {
  try {
    return labelSelectorToString(labelSelectorFromObject(obj.spec?.selector as never)) || '<none>';
  } catch {
    return '<invalid>';
  }
}

registerTableColumns('DaemonSet', {
  columns: [
    NAME,
    col('Desired', 'The total number of nodes that should be running the daemon pod.', 'integer'),
    col('Current', 'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.', 'integer'),
    col('Ready', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.', 'integer'),
    col('Up-to-date', 'The total number of nodes that are running updated daemon pod', 'integer'),
    col('Available', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.', 'integer'),
    col('Node Selector', 'NodeSelector is a selector which must be true for the pod to fit on a node.'),
    AGE,
    col('Containers', 'Names of each container in the template.', 'string', 1),
    col('Images', 'Images referenced by each container in the template.', 'string', 1),
    col('Selector', 'A label query over pods that are managed by the daemon set.', 'string', 1),
  ],
  cells: (obj, { now }) => {
    const ds = obj as DaemonSet;
    const containers = ds.spec?.template?.spec?.containers ?? [];
    return [
      ds.metadata.name ?? '',
      ds.status?.desiredNumberScheduled ?? 0,
      ds.status?.currentNumberScheduled ?? 0,
      ds.status?.numberReady ?? 0,
      ds.status?.updatedNumberScheduled ?? 0,
      ds.status?.numberAvailable ?? 0,
      nodeSelectorText(ds),
      ageSince(ds.metadata.creationTimestamp, now),
      containers.map((c) => c.name).join(','),
      containers.map((c) => c.image ?? '').join(','),
      selectorText(ds),
    ];
  },
}, { group: 'apps' });

registerTableColumns('StatefulSet', {
  columns: [
    NAME,
    col('Ready', 'Number of the pod with ready state'),
    AGE,
    col('Containers', 'Names of each container in the template.', 'string', 1),
    col('Images', 'Images referenced by each container in the template.', 'string', 1),
  ],
  cells: (obj, { now }) => {
    const s = obj as StatefulSet;
    const containers = s.spec?.template?.spec?.containers ?? [];
    return [
      s.metadata.name ?? '',
      `${s.status?.readyReplicas ?? 0}/${s.spec?.replicas ?? 0}`,
      ageSince(s.metadata.creationTimestamp, now),
      containers.map((c) => c.name).join(','),
      containers.map((c) => c.image ?? '').join(','),
    ];
  },
}, { group: 'apps' });

registerTableColumns('ControllerRevision', {
  columns: [NAME, col('Controller', 'Controller of the object'), col('Revision', 'Revision', 'integer'), AGE],
  cells: (obj, { now }) => {
    const ref = (obj.metadata.ownerReferences ?? []).find((r) => r.controller);
    const cr = obj as KubeObject & { revision?: number };
    return [obj.metadata.name ?? '', ref ? `${ref.kind.toLowerCase()}.${ref.apiVersion.split('/')[0]}/${ref.name}` : '<none>', cr.revision ?? 0, ageSince(obj.metadata.creationTimestamp, now)];
  },
}, { group: 'apps' });

registerTableColumns('PersistentVolumeClaim', {
  columns: [
    NAME,
    col('Status', 'Phase is the current phase of the claim.'),
    col('Volume', 'VolumeName is the binding reference to the PersistentVolume backing this claim.'),
    col('Capacity', 'Capacity is the actual resources of the underlying volume.'),
    col('Access Modes', 'AccessModes contains the actual access modes the volume backing the PVC has.'),
    col('StorageClass', 'StorageClassName is the name of the StorageClass required by the claim.'),
    AGE,
  ],
  cells: (obj, { now }) => {
    const pvc = obj as PersistentVolumeClaim;
    const modes = (pvc.status?.accessModes ?? pvc.spec?.accessModes ?? []).map((m) => ({ ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' })[m] ?? m);
    return [
      pvc.metadata.name ?? '',
      pvc.status?.phase ?? 'Pending',
      // The backing storage is the Docker named volume of the claim.
      `berth-pvc-${pvc.metadata.namespace}-${pvc.metadata.name}`,
      pvc.status?.capacity?.storage ?? '',
      modes.join(','),
      pvc.spec?.storageClassName ?? '<unset>',
      ageSince(pvc.metadata.creationTimestamp, now),
    ];
  },
});
