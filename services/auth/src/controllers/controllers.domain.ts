import { X509Certificate, createHash } from 'node:crypto';
import type { ListInput, ListPage } from '../shared/model.domain.ts';

/** This controller as `/controllers` lists it (ZITI-FACTS §7.7). */
export interface ControllerRecord {
  id: string;
  name: string;
  certPem: string;
  fingerprint: string;
  ctrlAddress: string | null;
  apiAddresses: Record<string, { url: string; version: string }[]>;
  isOnline: boolean;
  lastJoinedAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** Port: filters, sorts and pages controller records with ZitiQL. */
export interface ControllerQuery {
  list(records: ControllerRecord[], input: ListInput): Promise<ListPage<ControllerRecord>>;
}

/** Port: the edge API's server certificate chain (leaf first), from pki-enrollment. */
export type ServerCertificateSource = () => Promise<string>;

/**
 * `/controllers`: the reference lists HA peers only (an empty list without raft); this controller
 * is one logical controller however many replicas serve it, so the list holds that one record,
 * addressed by the advertised address and identified by the certificate the gateway presents.
 */
export class ControllerService {
  constructor(
    private readonly serverCertificate: ServerCertificateSource,
    private readonly query: ControllerQuery,
    private readonly advertisedAddress: string,
    private readonly startedAt: Date = new Date(),
  ) {}

  async record(): Promise<ControllerRecord> {
    const chain = await this.serverCertificate();
    const leafPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(chain)?.[0] ?? '';
    const leaf = new X509Certificate(leafPem);
    const host = this.advertisedAddress.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
    const base = `https://${this.advertisedAddress}`;
    return {
      id: createHash('sha256').update(`controller:${this.advertisedAddress}`).digest('hex').slice(0, 16),
      name: host,
      certPem: `${leafPem}\n`,
      fingerprint: createHash('sha1').update(leaf.raw).digest('hex'),
      ctrlAddress: null,
      apiAddresses: {
        'edge-client': [{ url: `${base}/edge/client/v1`, version: 'v1' }],
        'edge-management': [{ url: `${base}/edge/management/v1`, version: 'v1' }],
      },
      isOnline: true,
      lastJoinedAt: this.startedAt,
      createdAt: new Date(leaf.validFrom),
      updatedAt: this.startedAt,
    };
  }

  async list(input: ListInput): Promise<ListPage<ControllerRecord>> {
    return this.query.list([await this.record()], input);
  }
}
