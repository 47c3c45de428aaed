import { FALLBACK_BASE_URL } from '@herald/auth';

export const HUB_PATH = '/.well-known/mercure';
/** RFC 9728 §3.1: the well-known segment goes between the host and the resource's path. */
export const RESOURCE_METADATA_PREFIX = '/.well-known/oauth-protected-resource';
export const RESOURCE_METADATA_PATH = `${RESOURCE_METADATA_PREFIX}${HUB_PATH}`;

/**
 * The hub's own identity: its URL, and the URLs derived from it. Built once from configuration,
 * never from a request: Host, X-Forwarded-Host and an absolute-form request target are chosen by
 * the client, so anything checked against a claim or advertised in a challenge must not come from
 * them (issue #8, defect 4; docs/hub.md, "The hub's URL").
 */
export class HubIdentity {
  /** MERCURE_PUBLIC_URL, else the fixed canonical base URL patterns use (`http://mercure.invalid/…`). */
  readonly hubUrl: string;
  /** Whether `hubUrl` is the operator's (MERCURE_PUBLIC_URL) rather than the fallback. */
  readonly configured: boolean;
  /** The absolute URL of the RFC 9728 protected resource metadata of `hubUrl`. */
  readonly resourceMetadataUrl: string;

  constructor(publicUrl: URL | undefined) {
    this.configured = publicUrl !== undefined;
    // config.ts guarantees a configured URL ends with the hub path and has no query or fragment.
    const hub = new URL(publicUrl?.href ?? FALLBACK_BASE_URL);
    this.hubUrl = hub.href;
    const path = hub.pathname === '/' ? '' : hub.pathname.replace(/\/$/, '');
    this.resourceMetadataUrl = `${hub.origin}${RESOURCE_METADATA_PREFIX}${path}`;
  }

  /**
   * The absolute URL of a resource under the hub path (`/.well-known/mercure/…`): the hub URL
   * followed by the part after the hub path, so a public URL with a path prefix keeps it.
   */
  absolute(hubRelativePath: string): string {
    if (!hubRelativePath.startsWith(HUB_PATH))
      throw new TypeError(`not under ${HUB_PATH}: ${hubRelativePath}`);
    return `${this.hubUrl.replace(/\/$/, '')}${hubRelativePath.slice(HUB_PATH.length)}`;
  }

  /**
   * The `Link: rel="mercure"` target: the configured URL, else the hub path as a relative
   * reference (RFC 8288 resolves it against the URL the client used, which is the client's
   * business; the hub itself never echoes a client-supplied host).
   */
  get linkTarget(): string {
    return this.configured ? this.hubUrl : HUB_PATH;
  }
}
