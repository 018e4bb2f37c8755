/** Protobuf bodies in channel messages (channel `protobufs/protobufs.go` MarshalTyped / TypedResponse). */
import { ChannelProtocolError } from '../errors.ts';
import { createMessage, type ChannelMessage, type CreateMessageOptions } from '../frame.ts';
import type { DecodeOptions, MessageType } from './schema.ts';

export interface ProtoMessageOptions extends CreateMessageOptions {
  /** Overrides the type's own content type (and is required when it has none). */
  contentType?: number;
}

function contentTypeFor(type: MessageType<unknown>, override: number | undefined): number {
  const contentType = override ?? type.contentType;
  if (contentType === undefined) {
    throw new ChannelProtocolError('invalid-message', `${type.typeName} has no content type of its own`);
  }
  return contentType;
}

/** A channel message whose body is `value` encoded as `type`. */
export function protoMessage<T>(type: MessageType<T>, value: T, options: ProtoMessageOptions = {}): ChannelMessage {
  return createMessage(contentTypeFor(type, options.contentType), type.encode(value), options);
}

export interface DecodeProtoMessageOptions extends DecodeOptions {
  contentType?: number;
}

/** Decodes the body of `msg` as `type`, after checking its content type is the one `type` is sent with. */
export function decodeProtoMessage<T>(
  type: MessageType<T>,
  msg: ChannelMessage,
  options: DecodeProtoMessageOptions = {},
): T {
  const expected = contentTypeFor(type, options.contentType);
  if (msg.contentType !== expected) {
    throw new ChannelProtocolError(
      'unexpected-content-type',
      `expected ${expected} (${type.typeName}), got ${msg.contentType}`,
    );
  }
  return type.decode(msg.body, options);
}
