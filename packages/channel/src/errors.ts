/**
 * The one error this package throws. Every decoder (frames, header values, protobuf, messages) reports bad
 * input as a `ChannelProtocolError` with a short `code`, so a caller can close the connection on any of them
 * without catching anything else. Encoders use it too when asked to produce bytes the peer could not read.
 */

export type ChannelProtocolErrorCode =
  // framing (channel message.go ReadV2 / unmarshalV2 / unmarshalHeaders)
  | 'bad-magic'
  | 'unknown-version'
  | 'invalid-length'
  | 'headers-too-large'
  | 'body-too-large'
  | 'truncated-header'
  | 'duplicate-header'
  | 'invalid-reply-for'
  | 'truncated-frame'
  // header values (channel message.go Get*Header, Decode*)
  | 'invalid-header-value'
  | 'missing-header'
  // protobuf wire
  | 'protobuf-truncated'
  | 'protobuf-varint-overflow'
  | 'protobuf-field-number'
  | 'protobuf-wire-type'
  | 'protobuf-invalid-utf8'
  | 'protobuf-group'
  | 'protobuf-depth'
  | 'protobuf-too-large'
  // messages
  | 'unexpected-content-type'
  | 'invalid-version'
  // encoders asked for something the peer cannot decode
  | 'invalid-message';

export class ChannelProtocolError extends Error {
  readonly code: ChannelProtocolErrorCode;

  constructor(code: ChannelProtocolErrorCode, message?: string) {
    super(message ? `${code}: ${message}` : code);
    this.name = 'ChannelProtocolError';
    this.code = code;
  }
}

export function isChannelProtocolError(err: unknown): err is ChannelProtocolError {
  return err instanceof ChannelProtocolError;
}
