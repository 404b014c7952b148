/**
 * Kubernetes' string-format rules (RFC 1123 names, qualified names, label values, port names),
 * each returning the list of problems in Kubernetes' own words so clients see familiar messages.
 * An empty list means valid.
 */

/** `must be no more than N characters` */
export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/** `must be non-empty` */
export function emptyError(): string {
  return 'must be non-empty';
}

/** `must be between LO and HI, inclusive` */
export function inclusiveRangeError(lo: number, hi: number): string {
  return `must be between ${lo} and ${hi}, inclusive`;
}

/**
 * Kubernetes' regex explanation, examples included. The odd `',  or '` spacing is what
 * kube-apiserver prints, kept so messages match character for character.
 */
export function regexError(message: string, pattern: string, examples: string[] = []): string {
  if (examples.length === 0) return `${message} (regex used for validation is '${pattern}')`;
  const shown = examples.map((e) => `'${e}', `).join(' or ');
  return `${message} (e.g. ${shown}regex used for validation is '${pattern}')`;
}

// ---------- RFC 1123 ----------

export const DNS1123_LABEL_MAX_LENGTH = 63;
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_LABEL_RE = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/** Problems with `value` as an RFC 1123 label (namespace names, container names, …). */
export function dns1123LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL_RE.test(value)) {
    // A valid subdomain that is not a valid label can only be failing because of its dots.
    if (DNS1123_SUBDOMAIN_RE.test(value)) errs.push('must not contain dots');
    else errs.push(regexError(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, ['my-name', '123-abc']));
  }
  return errs;
}

/** Problems with `value` as an RFC 1123 subdomain (most object names, label-key prefixes, …). */
export function dns1123SubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, ['example.com']));
  return errs;
}

export function isDNS1123Label(value: string): boolean {
  return dns1123LabelErrors(value).length === 0;
}

export function isDNS1123Subdomain(value: string): boolean {
  return dns1123SubdomainErrors(value).length === 0;
}

// ---------- RFC 1035 ----------

export const DNS1035_LABEL_MAX_LENGTH = 63;
const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const DNS1035_LABEL_RE = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const DNS1035_LABEL_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

/** Problems with `value` as an RFC 1035 label (Service names: they become DNS names and env var prefixes). */
export function dns1035LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1035_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1035_LABEL_MAX_LENGTH));
  if (!DNS1035_LABEL_RE.test(value)) errs.push(regexError(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, ['my-name', 'abc-123']));
  return errs;
}

// ---------- qualified names (label keys, annotation keys, finalizers) ----------

export const QUALIFIED_NAME_MAX_LENGTH = 63;
const QUALIFIED_NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QUALIFIED_NAME_RE = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const QUALIFIED_NAME_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_EXAMPLES = ['MyName', 'my.name', '123-abc'];

/** Problems with `value` as `[prefix/]name`: prefix a DNS subdomain, name ≤63 alphanumerics with `-_.`. */
export function qualifiedNameErrors(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) errs.push(`prefix part ${emptyError()}`);
    else for (const msg of dns1123SubdomainErrors(prefix)) errs.push(`prefix part ${msg}`);
  } else {
    return [
      `a qualified name ${regexError(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, QUALIFIED_NAME_EXAMPLES)} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push(`name part ${emptyError()}`);
  else if (name.length > QUALIFIED_NAME_MAX_LENGTH) errs.push(`name part ${maxLenError(QUALIFIED_NAME_MAX_LENGTH)}`);
  if (name.length > 0 && !QUALIFIED_NAME_RE.test(name)) {
    errs.push(`name part ${regexError(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, QUALIFIED_NAME_EXAMPLES)}`);
  }
  return errs;
}

export function isQualifiedName(value: string): boolean {
  return qualifiedNameErrors(value).length === 0;
}

// ---------- label values ----------

export const LABEL_VALUE_MAX_LENGTH = 63;
const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** Problems with `value` as a label value (empty is allowed). */
export function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!LABEL_VALUE_RE.test(value)) errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, ['MyValue', 'my_value', '12345']));
  return errs;
}

export function isValidLabelValue(value: string): boolean {
  return labelValueErrors(value).length === 0;
}

// ---------- ports ----------

export const PORT_NAME_MAX_LENGTH = 15;

/** Problems with `value` as an IANA_SVC_NAME (container port names). */
export function portNameErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > PORT_NAME_MAX_LENGTH) errs.push(maxLenError(PORT_NAME_MAX_LENGTH));
  if (!/^[-a-z0-9]+$/.test(value)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(value)) errs.push('must contain at least one letter (a-z)');
  if (value.includes('--')) errs.push('must not contain consecutive hyphens');
  if (value.startsWith('-') || value.endsWith('-')) errs.push('must not begin or end with a hyphen');
  return errs;
}

/** Problems with `port` as a TCP/UDP port number (1–65535). */
export function portNumberErrors(port: number): string[] {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? [] : [inclusiveRangeError(1, 65535)];
}

// ---------- environment variables ----------

const ENV_NAME_MSG = "a valid environment variable name must consist only of printable ASCII characters other than '='";

/** Kubernetes' relaxed rule: any printable ASCII except '='. */
export function envVarNameErrors(value: string): string[] {
  if (value.length === 0) return [`environment variable name ${emptyError()}`];
  return /^[\x20-\x3c\x3e-\x7e]+$/.test(value) ? [] : [ENV_NAME_MSG];
}
