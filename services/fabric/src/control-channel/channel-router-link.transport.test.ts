import { edge, protoMessage } from '@ziti/channel';
import { afterEach, describe, expect, it } from 'vitest';
import { disposeAllPairs, openPair } from '../../test/channel-harness.ts';
import { ChannelRouterLink, edgeHelloOf } from './channel-router-link.transport.ts';

/**
 * The URLs SDKs are given for an edge router (ziti `controller/sync_strats/sync_instant.go
 * ReceiveClientHello`): each listener's advertised address, else hostname with the deprecated
 * protocols/protocolPorts pairs.
 */

function address(protocol: string, hostname: string, port: number): edge.Address {
  return { value: `${protocol}:${hostname}:${port}`, protocol, hostname, port };
}

/** A ClientHello as the router sends it, through the codec (so defaults are what decoding gives). */
function clientHello(init: Partial<edge.ClientHello>): edge.ClientHello {
  return edge.ClientHello.decode(edge.ClientHello.encode(edge.ClientHello.create(init)));
}

describe('edgeHelloOf', () => {
  it('takes each listener’s advertised address as protocol://host:port', () => {
    const hello = clientHello({
      hostname: 'router.example',
      listeners: [
        { address: address('tls', '0.0.0.0', 3022), advertise: address('tls', 'router.example', 3022) },
        { address: address('wss', '0.0.0.0', 3023), advertise: address('wss', 'ws.router.example', 443) },
      ],
    });
    expect(edgeHelloOf(hello)).toEqual({
      hostname: 'router.example',
      supportedProtocols: { tls: 'tls://router.example:3022', wss: 'wss://ws.router.example:443' },
    });
  });

  it('uses the advertised address, not the bound one', () => {
    const hello = clientHello({
      listeners: [{ address: address('tls', '0.0.0.0', 9999), advertise: address('tls', '127.0.0.1', 3022) }],
    });
    expect(edgeHelloOf(hello).supportedProtocols).toEqual({ tls: 'tls://127.0.0.1:3022' });
  });

  it('ignores the deprecated protocols and ports when there are listeners', () => {
    const hello = clientHello({
      hostname: 'legacy.example',
      protocols: ['tls', 'ws'],
      protocolPorts: ['1111', '2222'],
      listeners: [{ advertise: address('tls', 'new.example', 3022) }],
    });
    expect(edgeHelloOf(hello)).toEqual({
      hostname: 'legacy.example',
      supportedProtocols: { tls: 'tls://new.example:3022' },
    });
  });

  it('a later listener of the same protocol wins, as in the reference’s map', () => {
    const hello = clientHello({
      listeners: [{ advertise: address('tls', 'first', 1) }, { advertise: address('tls', 'second', 2) }],
    });
    expect(edgeHelloOf(hello).supportedProtocols).toEqual({ tls: 'tls://second:2' });
  });

  it('skips a listener that advertises nothing', () => {
    const hello = clientHello({
      listeners: [{ address: address('tls', '0.0.0.0', 3022) }, { advertise: address('wss', 'r', 443) }],
    });
    expect(edgeHelloOf(hello).supportedProtocols).toEqual({ wss: 'wss://r:443' });
  });

  it('falls back to hostname with protocols and protocolPorts pairwise when there are no listeners', () => {
    const hello = clientHello({ hostname: 'old.example', protocols: ['tls', 'ws'], protocolPorts: ['3022', '3023'] });
    expect(edgeHelloOf(hello)).toEqual({
      hostname: 'old.example',
      supportedProtocols: { tls: 'tls://old.example:3022', ws: 'ws://old.example:3023' },
    });
  });

  it('leaves out a protocol without a port in the fallback', () => {
    const hello = clientHello({ hostname: 'h', protocols: ['tls', 'ws', 'wss'], protocolPorts: ['1'] });
    expect(edgeHelloOf(hello).supportedProtocols).toEqual({ tls: 'tls://h:1' });
  });

  it('no listeners and no hostname: no URLs', () => {
    expect(edgeHelloOf(clientHello({ protocols: ['tls'], protocolPorts: ['3022'] }))).toEqual({
      hostname: '',
      supportedProtocols: {},
    });
    expect(edgeHelloOf(clientHello({}))).toEqual({ hostname: '', supportedProtocols: {} });
  });
});

describe('ChannelRouterLink.edgeHello over a live channel', () => {
  afterEach(() => disposeAllPairs());

  it('sends a ServerHello and takes the ClientHello that replies to it', async () => {
    const pair = await openPair();
    const link = new ChannelRouterLink('er-1', '127.0.0.1:1', pair.channel, 'v1.1.9');
    const hello = link.edgeHello(1_000);
    const serverHello = await pair.next((m) => m.contentType === edge.ContentType.ServerHelloType);
    const sent = edge.ServerHello.decode(serverHello.body);
    expect(sent.version).toBe('v1.1.9');
    pair.send(
      protoMessage(
        edge.ClientHello,
        edge.ClientHello.create({ hostname: 'h', listeners: [{ advertise: address('tls', 'h', 3022) }] }),
        { sequence: 50, replyFor: serverHello.sequence },
      ),
    );
    expect(await hello).toEqual({ hostname: 'h', supportedProtocols: { tls: 'tls://h:3022' } });
  });

  it('takes a ClientHello that comes on its own, as the router messages hand it over', async () => {
    const held: { link?: ChannelRouterLink } = {};
    const pair = await openPair({
      onMessage: (msg) => {
        if (msg.contentType === edge.ContentType.ClientHelloType) held.link!.clientHello(msg);
      },
    });
    const link = new ChannelRouterLink('er-1', '127.0.0.1:1', pair.channel, 'v1.1.9');
    held.link = link;
    const hello = link.edgeHello(1_000);
    await pair.next((m) => m.contentType === edge.ContentType.ServerHelloType);
    pair.send(
      protoMessage(
        edge.ClientHello,
        edge.ClientHello.create({ hostname: 'solo', protocols: ['tls'], protocolPorts: ['1'] }),
        {
          sequence: 51,
        },
      ),
    );
    expect(await hello).toEqual({ hostname: 'solo', supportedProtocols: { tls: 'tls://solo:1' } });
    expect(link.clientHello(pair.messages[0]!)).toBe(false);
  });

  it('fails when no ClientHello comes in time', async () => {
    const pair = await openPair();
    const link = new ChannelRouterLink('er-1', '127.0.0.1:1', pair.channel, 'v1.1.9');
    await expect(link.edgeHello(50)).rejects.toThrow('timeout waiting for the edge client hello');
  });
});
