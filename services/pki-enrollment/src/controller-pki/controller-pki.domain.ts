import type { SecretBox } from '@ziti/platform/secret-box';
import type { ServerIdentity } from '@ziti/contracts';
import type { PkiMaterialStore, StoredMaterial } from './pki-material.ports.ts';
import { parsePemChain } from '@ziti/x509';
import { issueServerCertificate } from '@ziti/x509';
import { pkcs7CertsOnly } from '@ziti/x509';
import { type Signer, createControllerPki, loadSigner } from '@ziti/x509';

export interface ControllerPkiOptions {
  /** host:port clients use; its host goes into the server certificate (its common name too). */
  advertisedAddress: string;
  /**
   * More host names (or addresses) the certificate must be valid for: the router edge's advertised
   * host (routers verify it when they dial the control port), any the operator lists.
   */
  extraNames?: string[];
  /** An operator-supplied signer (chain PEM + key PEM) instead of the generated one. */
  suppliedSigner?: { certPem: string; keyPem: string };
  serverCertValidityDays?: number;
  /** Re-issue the server certificate when it has less than this left. */
  renewBeforeDays?: number;
}

const keyContext = (name: string) => `pki:${name}`;

function isIpAddress(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(':');
}

export function hostOf(advertisedAddress: string): string {
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(advertisedAddress);
  if (m) return m[1]!;
  const idx = advertisedAddress.lastIndexOf(':');
  return idx > 0 && !advertisedAddress.slice(0, idx).includes(':')
    ? advertisedAddress.slice(0, idx)
    : advertisedAddress;
}

/**
 * The controller's own PKI: a root and a signing intermediate created once (or an operator's
 * signer), and the edge API's server identity issued from it, all kept in the service's database
 * with keys encrypted. Every replica converges on the same material.
 */
export class ControllerPkiService {
  private signer?: Signer;
  private caBundle: string[] = [];
  private server?: ServerIdentity;

  constructor(
    private readonly store: PkiMaterialStore,
    private readonly box: SecretBox,
    private readonly options: ControllerPkiOptions,
  ) {}

  async initialize(now = new Date()): Promise<void> {
    if (this.options.suppliedSigner) {
      this.signer = await loadSigner(this.options.suppliedSigner);
      this.caBundle = [this.signer.chainPem];
    } else {
      const stored = await this.loadOrCreateCa();
      this.signer = await loadSigner({
        certPem: stored.signer.certPem + stored.root.certPem,
        keyPem: this.decrypt(stored.signer),
      });
      this.caBundle = [stored.signer.certPem, stored.root.certPem];
    }
    this.server = await this.loadOrIssueServer(now);
  }

  private decrypt(m: StoredMaterial): string {
    if (!m.keyEncrypted) throw new Error(`no key stored for ${m.name}`);
    return this.box.decrypt(m.keyEncrypted, { context: keyContext(m.name) }).toString('utf8');
  }

  private encrypt(name: string, keyPem: string): string {
    return this.box.encrypt(keyPem, { context: keyContext(name) });
  }

  private async loadOrCreateCa(): Promise<{ root: StoredMaterial; signer: StoredMaterial }> {
    let root = await this.store.load('root');
    let signer = await this.store.load('signer');
    if (!root || !signer) {
      const pki = await createControllerPki({ name: 'Ziti Edge Controller' });
      // The signer row decides the winner of a race: insert it first, then the root that signed it.
      signer = await this.store.insertIfAbsent({
        name: 'signer',
        certPem: pki.intermediate.certPem,
        keyEncrypted: this.encrypt('signer', pki.intermediate.keyPem),
      });
      if (signer.certPem === pki.intermediate.certPem) {
        root = await this.store.insertIfAbsent({
          name: 'root',
          certPem: pki.root.certPem,
          keyEncrypted: this.encrypt('root', pki.root.keyPem),
        });
      } else {
        root = (await this.waitFor('root'))!;
      }
    }
    return { root, signer };
  }

  private async waitFor(name: StoredMaterial['name']): Promise<StoredMaterial> {
    for (let i = 0; i < 100; i++) {
      const m = await this.store.load(name);
      if (m) return m;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${name} material did not appear`);
  }

  /** Every name the server certificate is for: the advertised host first, then the extra ones. */
  private serverNames(): string[] {
    const names = [hostOf(this.options.advertisedAddress), ...(this.options.extraNames ?? [])];
    return [...new Set(names.map((n) => n.trim()).filter((n) => n !== ''))];
  }

  private needsNewServerCert(stored: StoredMaterial, now: Date): boolean {
    const leaf = parsePemChain(stored.certPem)[0];
    if (!leaf) return true;
    const renewMs = (this.options.renewBeforeDays ?? 30) * 86_400_000;
    if (leaf.notAfter.getTime() - now.getTime() < renewMs) return true;
    for (const name of this.serverNames()) {
      const names = isIpAddress(name) ? leaf.sans.ipAddresses : leaf.sans.dnsNames;
      if (!names.includes(name)) return true;
    }
    // Issued by another signer (an operator switched to a supplied one): re-issue.
    return !stored.certPem.includes(this.signer!.certPem.trim());
  }

  private async loadOrIssueServer(now: Date): Promise<ServerIdentity> {
    let stored = await this.store.load('server');
    if (!stored || this.needsNewServerCert(stored, now)) {
      const host = hostOf(this.options.advertisedAddress);
      const dnsNames = ['localhost'];
      const ipAddresses = ['127.0.0.1', '::1'];
      for (const name of this.serverNames()) {
        if (isIpAddress(name)) {
          if (!ipAddresses.includes(name)) ipAddresses.push(name);
        } else if (!dnsNames.includes(name)) dnsNames.splice(dnsNames.length - 1, 0, name);
      }
      const issued = await issueServerCertificate(this.signer!, {
        commonName: host,
        dnsNames,
        ipAddresses,
        validityDays: this.options.serverCertValidityDays ?? 365,
      });
      const fresh: StoredMaterial = {
        name: 'server',
        certPem: issued.chainPem,
        keyEncrypted: this.encrypt('server', issued.keyPem),
      };
      stored = stored ? await this.store.replace(fresh, stored.certPem) : await this.store.insertIfAbsent(fresh);
    }
    return { certChainPem: stored.certPem, keyPem: this.decrypt(stored), caBundlePem: this.caBundle.join('') };
  }

  serverIdentity(): ServerIdentity {
    if (!this.server) throw new Error('controller PKI not initialized');
    return this.server;
  }

  issuer(): Signer {
    if (!this.signer) throw new Error('controller PKI not initialized');
    return this.signer;
  }

  /** The body of `/.well-known/est/cacerts`: every CA certificate clients should trust. */
  wellKnownCaCerts(): string {
    return pkcs7CertsOnly(parsePemChain(this.caBundle.join('')).map((c) => c.pem));
  }
}
