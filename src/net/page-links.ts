/**
 * The web page's address: where it can be opened (`pageOrigins`) and the link that carries a key
 * in its fragment, which browsers never send to the server, so the key stays out of request lines
 * and logs. The keys themselves are the accounts' (services/web-session.ts).
 */
import type { NetworkInterfaceInfo } from 'node:os';

export interface ListenAddress {
  /** The address serve listens on (`--host`). */
  readonly host: string;
  readonly port: number;
  /** `--public-url`: where clients reach the server; when set, the only address worth printing. */
  readonly publicUrl?: string | undefined;
  /** serve --tls-cert: the page is at https:// addresses. */
  readonly tls?: boolean | undefined;
}

/** Addresses on every interface: the link must name the machine's own addresses instead. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

function origin(address: string, port: number, tls: boolean | undefined): string {
  return `${tls ? 'https' : 'http'}://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/**
 * The origins the page can be opened at: the public URL when one is set; for a wildcard host, each
 * non-loopback address of the machine (IPv6 ones too when listening on `::`, never link-local ones,
 * which need a zone a URL cannot carry), or loopback when it has none; otherwise the host itself.
 */
export function pageOrigins(listen: ListenAddress, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string[] {
  if (listen.publicUrl) return [listen.publicUrl];
  if (!WILDCARD_HOSTS.has(listen.host)) return [origin(listen.host.replace(/^\[(.*)\]$/, '$1'), listen.port, listen.tls)];
  const ipv6 = listen.host !== '0.0.0.0';
  const addresses = Object.values(interfaces)
    .flatMap((infos) => infos ?? [])
    .filter((info) => !info.internal && (info.family === 'IPv4' || (ipv6 && !/^fe80:/i.test(info.address))))
    .sort((a, b) => (a.family === b.family ? 0 : a.family === 'IPv4' ? -1 : 1))
    .map((info) => info.address);
  const unique = [...new Set(addresses)];
  if (unique.length === 0) return [origin(ipv6 ? '::1' : '127.0.0.1', listen.port, listen.tls)];
  return unique.map((address) => origin(address, listen.port, listen.tls));
}

/** The page's address with the key in its fragment (`key` empty: the page's address alone). */
export function webSessionLink(base: string, key: string): string {
  const url = new URL(base);
  // The page is the folder's index: `/`, or `/prefix/` under a --public-url with a path.
  url.pathname = url.pathname.replace(/\/*$/, '/');
  if (key) url.hash = `key=${encodeURIComponent(key)}`;
  return url.toString();
}

/** The page's address with a one-time invite in its fragment: the page exchanges it for the person's own key. */
export function inviteLink(base: string, invite: string): string {
  const url = new URL(webSessionLink(base, ''));
  url.hash = `invite=${encodeURIComponent(invite)}`;
  return url.toString();
}
