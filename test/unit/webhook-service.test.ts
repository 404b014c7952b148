/**
 * Admission webhooks reached through `clientConfig.service`: the Service port (default 443) is
 * resolved to a random ready endpoint of its EndpointSlices serving that port's name; the call goes
 * to that endpoint over real HTTPS on loopback, its certificate checked for `<svc>.<ns>.svc` (and
 * that name sent as SNI) against the caBundle; missing Services, ports and endpoints are named.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { ENDPOINTSLICE_CONTROLLER_NAME, MANAGED_BY_LABEL, SERVICE_NAME_LABEL } from '../../src/api/services.js';
import type { EndpointSlice, Pod, Service } from '../../src/api/types.js';
import { ConfigurationCache, resolveWebhookService, webhookAdmission } from '../../src/admission/plugins/webhooks.js';
import { ensurePki } from '../../src/auth/pki.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

const log = pino({ level: 'silent' });

async function serviceWithSlice(env: ControllerEnv, name: string, opts: { port: number; targetPort: number; endpoints: Array<{ ip: string; ready?: boolean }>; type?: 'ExternalName' }) {
  const svc = await env.create<Service>('', 'services', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: opts.type === 'ExternalName' ? { type: 'ExternalName', externalName: 'example.org' } : { selector: { app: name }, ports: [{ name: 'https', port: opts.port, targetPort: opts.targetPort }] },
  });
  await env.create<EndpointSlice>('discovery.k8s.io', 'endpointslices', {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${name}-abc`, labels: { [SERVICE_NAME_LABEL]: name, [MANAGED_BY_LABEL]: ENDPOINTSLICE_CONTROLLER_NAME } },
    addressType: 'IPv4',
    ports: [{ name: 'https', port: opts.targetPort, protocol: 'TCP' }],
    endpoints: opts.endpoints.map((e, i) => ({ addresses: [e.ip], conditions: { ready: e.ready ?? true }, targetRef: { kind: 'Pod', namespace: 'default', name: `${name}-${i}` } })),
  });
  return svc;
}

describe('webhooks through clientConfig.service', () => {
  let dir: string;
  let server: https.Server;
  let port: number;
  let caBundle: string;
  const seen: Array<{ servername: string | undefined; path: string }> = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-webhook-svc-'));
    const pki = await ensurePki({ dataDir: dir, altNames: ['hooks.default.svc'] });
    caBundle = Buffer.from(pki.caCert).toString('base64');
    server = https.createServer({ cert: pki.serverCert, key: pki.serverKey }, (req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        seen.push({ servername: (req.socket as unknown as { servername?: string }).servername, path: req.url ?? '' });
        const r = (JSON.parse(body) as { request: { uid: string; object: Pod } }).request;
        const deny = r.object.metadata.labels?.deny === 'yes';
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: r.uid, allowed: !deny, ...(deny ? { status: { code: 403, message: 'denied by the service' } } : {}) } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });

  after(() => {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('resolves the Service port to a ready endpoint serving the same port name; names what is missing', async () => {
    const env = await controllerEnv();
    await serviceWithSlice(env, 'hooks', { port: 443, targetPort: 8443, endpoints: [{ ip: '10.244.0.5', ready: false }, { ip: '10.244.0.6' }, { ip: '10.244.0.7' }] });
    const picks: number[] = [];
    const target = await resolveWebhookService(env.registry, { namespace: 'default', name: 'hooks', path: '/validate' }, (n) => (picks.push(n), n - 1));
    assert.deepEqual(picks, [2], 'the unready endpoint is not a candidate');
    assert.deepEqual(target, { url: 'https://10.244.0.7:8443/validate', servername: 'hooks.default.svc' });

    await assert.rejects(() => resolveWebhookService(env.registry, { namespace: 'default', name: 'nope' }), /service "nope" not found/);
    await assert.rejects(() => resolveWebhookService(env.registry, { namespace: 'default', name: 'hooks', port: 8080 }), /no service port 8080 found for service "hooks"/);
    await serviceWithSlice(env, 'idle', { port: 443, targetPort: 8443, endpoints: [{ ip: '10.244.0.9', ready: false }] });
    await assert.rejects(() => resolveWebhookService(env.registry, { namespace: 'default', name: 'idle' }), /no endpoints available for service "idle"/);
    await serviceWithSlice(env, 'ext', { port: 443, targetPort: 443, endpoints: [], type: 'ExternalName' });
    await assert.rejects(() => resolveWebhookService(env.registry, { namespace: 'default', name: 'ext' }), /unsupported service type "ExternalName"/);
  });

  it('calls the endpoint over HTTPS with the service DNS name as TLS server name, and a certificate without that name fails', async () => {
    const env = await controllerEnv();
    await serviceWithSlice(env, 'hooks', { port: 443, targetPort: port, endpoints: [{ ip: '127.0.0.1' }] });
    // Same endpoint, but the certificate does not name other.default.svc (it does name 127.0.0.1).
    await serviceWithSlice(env, 'other', { port: 443, targetPort: port, endpoints: [{ ip: '127.0.0.1' }] });
    const config = (name: string, failurePolicy: 'Fail' | 'Ignore' = 'Fail') => ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name },
      webhooks: [
        {
          name: `${name}.berth.dev`,
          clientConfig: { service: { namespace: 'default', name, path: '/check' }, caBundle },
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          failurePolicy,
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          objectSelector: { matchLabels: { hook: name } },
        },
      ],
    });
    await env.create('admissionregistration.k8s.io', 'validatingwebhookconfigurations', config('hooks'));
    await env.create('admissionregistration.k8s.io', 'validatingwebhookconfigurations', config('other'));
    const plugin = webhookAdmission('validating', { registry: env.registry, log });
    const attrs = (labels: Record<string, string>) => ({
      operation: 'CREATE' as const,
      info: env.info('', 'pods'),
      object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default', labels }, spec: { containers: [] } },
      dryRun: false,
    });

    await plugin.admit(attrs({ hook: 'hooks' }));
    assert.deepEqual(seen.at(-1), { servername: 'hooks.default.svc', path: '/check' });
    await assert.rejects(Promise.resolve(plugin.admit(attrs({ hook: 'hooks', deny: 'yes' }))), /admission webhook "hooks.berth.dev" denied the request: denied by the service/);
    await assert.rejects(Promise.resolve(plugin.admit(attrs({ hook: 'other' }))), /failed calling webhook "other.berth.dev": .*(altnames|other\.default\.svc)/i);
  });
});

describe('webhook configurations cache', () => {
  it('lists the configurations once, and again after any change to them', async () => {
    const env = await controllerEnv();
    const info = env.info('admissionregistration.k8s.io', 'validatingwebhookconfigurations');
    const cache = new ConfigurationCache(env.registry, info);
    const flush = () => new Promise((r) => setImmediate(r));
    const first = await cache.get();
    assert.deepEqual(first, []);
    assert.equal(await cache.get(), first, 'served from the cache while nothing changed');
    const config = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'later' },
      webhooks: [{ name: 'later.berth.dev', clientConfig: { url: 'https://127.0.0.1:1/x' }, sideEffects: 'None', admissionReviewVersions: ['v1'] }],
    };
    await env.create('admissionregistration.k8s.io', 'validatingwebhookconfigurations', config);
    await flush();
    const afterCreate = await cache.get();
    assert.deepEqual(afterCreate.map((c) => c.metadata.name), ['later']);
    await env.registry.delete(info, undefined, 'later');
    await flush();
    assert.deepEqual(await cache.get(), []);
  });
});
