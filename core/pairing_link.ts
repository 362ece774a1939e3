/**
 * The pairing link (`dock://HOST:PORT?code=…&fp=…`) both sides read: the box prints it (`dockd pair`),
 * the laptop parses it and pins the box's CA by its fingerprint (`dock pair`). Also the small byte
 * encodings pairing codes, credentials and tokens use.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { sha256Hex } from "./bytes.ts";

/** What {@linkcode parseLink} reads out of a pairing link. */
export interface PairingLink {
  host: string;
  port: number;
  code: string;
  /** The box CA's SHA-256 fingerprint, lowercase hex without colons. */
  fp: string;
}

/** The pairing link `dock://HOST:PORT?code=…&fp=…` (an IPv6 host in brackets). */
export function link(host: string, port: number, code: string, fingerprint: string): string {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (!/^[A-Za-z0-9._:-]+$/.test(bare)) badLink(`host '${host}' is not a host name or IP address`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) badLink(`port ${port} is not in 1-65535`);
  const fp = normalizeFingerprint(fingerprint);
  if (!fp) badLink("the fingerprint must be 64 hex digits (SHA-256)");
  const normalized = normalizeCode(code);
  if (!CODE.test(normalized)) badLink("the code is not a pairing code");
  return `dock://${bare.includes(":") ? `[${bare}]` : bare}:${port}?code=${normalized}&fp=${fp}`;
}

/** Reads a pairing link back; a malformed one is a DockError saying what is wrong. */
export function parseLink(text: string): PairingLink {
  const trimmed = text.trim();
  if (!trimmed.toLowerCase().startsWith("dock://")) badLink("does not start with dock://");
  const match = /^dock:\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d*))?\/?(?:\?(.*))?$/i.exec(trimmed);
  if (!match) badLink("has no valid HOST:PORT after dock://");
  const [, rawHost, rawPort, query] = match;
  if (!rawPort) badLink("names no port");
  const port = Number(rawPort);
  if (port < 1 || port > 65535) badLink(`has port ${rawPort}, which is not in 1-65535`);
  const params = new URLSearchParams(query ?? "");
  const code = normalizeCode(params.get("code") ?? "");
  if (!code) badLink("has no code");
  if (!CODE.test(code)) badLink("has a malformed code");
  const rawFp = params.get("fp");
  if (!rawFp) badLink("has no fp (the box's certificate fingerprint)");
  const fp = normalizeFingerprint(rawFp);
  if (!fp) badLink("has a malformed fp: expected 64 hex digits");
  const host = rawHost.startsWith("[") ? rawHost.slice(1, -1) : rawHost;
  return { host, port, code, fp };
}

/** SHA-256 over the DER of the first certificate in `pem`, lowercase hex without colons. */
export async function fingerprintOf(pem: string): Promise<string> {
  return await sha256Hex(pemToDer(pem));
}

/** Bytes as base64url without padding (tokens and credentials). */
export function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

// base32 (RFC 4648, lowercase): case-insensitive and without the `-`/`_` that chat apps' link
// detection drops from the end of a URL. At least 128 bits.
const CODE = /^[a-z2-7]{26,}$/;

function badLink(reason: string): never {
  throw new DockError(
    "invalid_link",
    `Cannot pair: the link ${reason}; expected dock://HOST:PORT?code=…&fp=…`,
    { status: 400 },
  );
}

/** A pairing code as the box stores it: trimmed, lower-case. */
export function normalizeCode(code: string): string {
  return code.trim().toLowerCase();
}

function normalizeFingerprint(fingerprint: string): string | null {
  // Accept the colon-separated uppercase form openssl and browsers print.
  const fp = fingerprint.trim().replaceAll(":", "").toLowerCase();
  return /^[0-9a-f]{64}$/.test(fp) ? fp : null;
}

/** The DER bytes of the first certificate in a PEM text. */
export function pemToDer(pem: string): Uint8Array<ArrayBuffer> {
  const match = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(pem);
  if (!match) {
    throw new DockError("invalid_certificate", "Cannot read the certificate: no PEM CERTIFICATE block found");
  }
  const binary = atob(match[1].replace(/\s+/g, ""));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
