/**
 * Reading X.509 data Berth is handed (PKCS#10 certificate requests, client certificates): a small DER
 * reader for the parts Kubernetes looks at — the subject's attributes (CN is a user name, O its groups),
 * the requested subject alternative names, the public key — and the request's self-signature, checked
 * with node:crypto so RSA, ECDSA and Ed25519 requests are all read as Kubernetes reads them. Pure: no
 * I/O, no server code; node-forge (large) is not loaded here, only where something must be issued.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/** One DER element: its tag, the whole encoding and the content bytes. */
interface DerNode {
  tag: number;
  /** the element's full encoding (tag, length and content) */
  raw: Buffer;
  content: Buffer;
}

function readNode(buf: Buffer, offset: number): DerNode {
  if (offset + 2 > buf.length) throw new Error('truncated DER');
  const tag = buf[offset]!;
  let length = buf[offset + 1]!;
  let headerLength = 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 4 || offset + 2 + octets > buf.length) throw new Error('unsupported DER length');
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + buf[offset + 2 + i]!;
    headerLength += octets;
  }
  const end = offset + headerLength + length;
  if (end > buf.length) throw new Error('truncated DER');
  return { tag, raw: buf.subarray(offset, end), content: buf.subarray(offset + headerLength, end) };
}

function childrenOf(node: DerNode): DerNode[] {
  const out: DerNode[] = [];
  for (let offset = 0; offset < node.content.length; ) {
    const child = readNode(node.content, offset);
    out.push(child);
    offset += child.raw.length;
  }
  return out;
}

function expectTag(node: DerNode | undefined, tag: number, what: string): DerNode {
  if (!node || node.tag !== tag) throw new Error(`malformed ${what}`);
  return node;
}

const SEQUENCE = 0x30;
const SET = 0x31;
const OID = 0x06;
const BIT_STRING = 0x03;
const OCTET_STRING = 0x04;

function oidOf(node: DerNode): string {
  const bytes = expectTag(node, OID, 'object identifier').content;
  if (bytes.length === 0) throw new Error('empty object identifier');
  const parts: number[] = [];
  const first = bytes[0]!;
  parts.push(first < 80 ? Math.floor(first / 40) : 2, first < 80 ? first % 40 : first - 80);
  let value = 0;
  for (const b of bytes.subarray(1)) {
    value = value * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

/** One attribute of a distinguished name, in the order it appears. */
export interface NameAttribute {
  /** e.g. 2.5.4.3 (commonName) */
  oid: string;
  value: string;
}

export const OID_COMMON_NAME = '2.5.4.3';
export const OID_ORGANIZATION = '2.5.4.10';

/** A distinguished name as Kubernetes reads it for authentication: CN and the O values. */
export interface SubjectSummary {
  attributes: NameAttribute[];
  commonName: string;
  organizations: string[];
}

function stringValue(node: DerNode): string {
  // BMPString is UTF-16BE; the other string types Kubernetes accepts are ASCII subsets or UTF-8.
  if (node.tag === 0x1e) {
    const swapped = Buffer.from(node.content);
    swapped.swap16();
    return swapped.toString('utf16le');
  }
  return node.content.toString(node.tag === 0x0c ? 'utf8' : 'latin1');
}

function readName(node: DerNode): SubjectSummary {
  const attributes: NameAttribute[] = [];
  for (const rdn of childrenOf(expectTag(node, SEQUENCE, 'name'))) {
    for (const atv of childrenOf(expectTag(rdn, SET, 'relative distinguished name'))) {
      const [type, value] = childrenOf(expectTag(atv, SEQUENCE, 'name attribute'));
      if (!type || !value) throw new Error('malformed name attribute');
      attributes.push({ oid: oidOf(type), value: stringValue(value) });
    }
  }
  return {
    attributes,
    commonName: attributes.find((a) => a.oid === OID_COMMON_NAME)?.value ?? '',
    organizations: attributes.filter((a) => a.oid === OID_ORGANIZATION).map((a) => a.value),
  };
}

/** Names a certificate or request claims besides its subject. */
export interface AlternativeNames {
  dnsNames: string[];
  emailAddresses: string[];
  ipAddresses: string[];
  uris: string[];
}

function readAlternativeNames(extnValue: Buffer): AlternativeNames {
  const out: AlternativeNames = { dnsNames: [], emailAddresses: [], ipAddresses: [], uris: [] };
  for (const general of childrenOf(expectTag(readNode(extnValue, 0), SEQUENCE, 'subjectAltName'))) {
    switch (general.tag) {
      case 0x81:
        out.emailAddresses.push(general.content.toString('latin1'));
        break;
      case 0x82:
        out.dnsNames.push(general.content.toString('latin1'));
        break;
      case 0x86:
        out.uris.push(general.content.toString('latin1'));
        break;
      case 0x87:
        out.ipAddresses.push(ipString(general.content));
        break;
      default:
        break; // otherName, directoryName …: not something Kubernetes' signers look at
    }
  }
  return out;
}

function ipString(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  const groups: string[] = [];
  for (let i = 0; i + 1 < b.length; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  return groups.join(':');
}

const OID_EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const OID_SUBJECT_ALT_NAME = '2.5.29.17';

/** Signature algorithms by OID: the digest node:crypto verifies with (null: the key decides, Ed25519). */
const SIGNATURE_DIGESTS: Record<string, string | null> = {
  '1.2.840.113549.1.1.5': 'sha1',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.3.101.112': null,
};

/** A PKCS#10 certificate request as read from its DER. */
export interface CertificateRequest extends AlternativeNames {
  subject: SubjectSummary;
  publicKey: KeyObject;
  /** the request's public key as SPKI PEM (what a signer certifies) */
  publicKeyPem: string;
  /** whether the request is signed by the key it carries */
  signatureValid: boolean;
}

/** The DER of each PEM block of this type, in order (content outside the blocks is ignored). */
export function pemBlocks(pem: string, type: string): Buffer[] {
  const out: Buffer[] = [];
  const re = new RegExp(`-----BEGIN ${type}-----\\r?\\n([\\s\\S]*?)-----END ${type}-----`, 'g');
  for (const m of pem.matchAll(re)) out.push(Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'));
  return out;
}

/**
 * Parses a PEM certificate request (the first block must be CERTIFICATE REQUEST, as Kubernetes'
 * ParseCSR requires); throws an Error whose message says what is wrong.
 */
export function parseCertificateRequestPem(pem: string): CertificateRequest {
  const m = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(pem);
  if (!m || m[1] !== 'CERTIFICATE REQUEST') throw new Error('PEM block type must be CERTIFICATE REQUEST');
  const der = pemBlocks(pem, 'CERTIFICATE REQUEST')[0];
  if (!der) throw new Error('PEM block type must be CERTIFICATE REQUEST');
  return parseCertificateRequestDer(der);
}

export function parseCertificateRequestDer(der: Buffer): CertificateRequest {
  let top: DerNode[];
  try {
    top = childrenOf(expectTag(readNode(der, 0), SEQUENCE, 'certificate request'));
  } catch (e) {
    throw new Error(`x509: malformed certificate request: ${(e as Error).message}`);
  }
  const [info, algorithm, signature] = top;
  if (!info || !algorithm || !signature) throw new Error('x509: malformed certificate request');
  const fields = childrenOf(expectTag(info, SEQUENCE, 'certificate request info'));
  const subject = readName(fields[1]!);
  const spki = expectTag(fields[2], SEQUENCE, 'subject public key info');
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: spki.raw, format: 'der', type: 'spki' });
  } catch {
    throw new Error('x509: unsupported public key in certificate request');
  }
  const names: AlternativeNames = { dnsNames: [], emailAddresses: [], ipAddresses: [], uris: [] };
  const attributes = fields[3];
  if (attributes && attributes.tag === 0xa0) {
    for (const attribute of childrenOf(attributes)) {
      const [type, values] = childrenOf(expectTag(attribute, SEQUENCE, 'attribute'));
      if (!type || !values || oidOf(type) !== OID_EXTENSION_REQUEST) continue;
      for (const extensions of childrenOf(values)) {
        for (const extension of childrenOf(expectTag(extensions, SEQUENCE, 'extensions'))) {
          const parts = childrenOf(expectTag(extension, SEQUENCE, 'extension'));
          const value = parts[parts.length - 1];
          if (parts[0] && oidOf(parts[0]) === OID_SUBJECT_ALT_NAME && value?.tag === OCTET_STRING) Object.assign(names, readAlternativeNames(value.content));
        }
      }
    }
  }
  const algorithmOid = oidOf(childrenOf(expectTag(algorithm, SEQUENCE, 'signature algorithm'))[0]!);
  const sigBits = expectTag(signature, BIT_STRING, 'signature').content;
  let signatureValid = false;
  if (algorithmOid in SIGNATURE_DIGESTS) {
    try {
      signatureValid = verify(SIGNATURE_DIGESTS[algorithmOid] ?? null, info.raw, publicKey, sigBits.subarray(1));
    } catch {
      signatureValid = false;
    }
  }
  return { subject, publicKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(), signatureValid, ...names };
}

/** The subject of a DER certificate (the part of a client certificate Kubernetes authenticates by). */
export function certificateSubject(der: Buffer): SubjectSummary {
  const [tbs] = childrenOf(expectTag(readNode(der, 0), SEQUENCE, 'certificate'));
  const fields = childrenOf(expectTag(tbs, SEQUENCE, 'tbsCertificate'));
  // version is an optional [0]; then serial, signature, issuer, validity, subject
  const at = fields[0]?.tag === 0xa0 ? 1 : 0;
  return readName(fields[at + 4]!);
}
