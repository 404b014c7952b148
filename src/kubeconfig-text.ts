/**
 * Owns the kubeconfig files Berth writes for people: the admin's (a bearer token) and a user's from
 * `berth kubeconfig --user` (a client certificate and key). One cluster, one user, one context in the
 * `default` namespace; stock kubectl and client libraries read them unchanged.
 */
export type KubeconfigCredential = { token: string } | { certificate: string; key: string };

export interface KubeconfigTextOptions {
  server: string;
  /** the cluster CA (PEM); absent for a plain-HTTP server */
  caCert?: string | undefined;
  userName: string;
  contextName: string;
  credential: KubeconfigCredential;
}

export function kubeconfigText(o: KubeconfigTextOptions): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const cluster = o.caCert ? `    certificate-authority-data: ${b64(o.caCert)}\n` : '';
  const credential = 'token' in o.credential ? `    token: ${o.credential.token}\n` : `    client-certificate-data: ${b64(o.credential.certificate)}\n    client-key-data: ${b64(o.credential.key)}\n`;
  // Quoted: user names such as system:serviceaccount:ns:name hold characters YAML would read otherwise.
  const user = JSON.stringify(o.userName);
  const context = JSON.stringify(o.contextName);
  return `apiVersion: v1
kind: Config
clusters:
- name: berth
  cluster:
    server: ${o.server}
${cluster}users:
- name: ${user}
  user:
${credential}contexts:
- name: ${context}
  context:
    cluster: berth
    user: ${user}
    namespace: default
current-context: ${context}
preferences: {}
`;
}
