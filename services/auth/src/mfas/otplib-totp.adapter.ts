import { randomBytes } from 'node:crypto';
import { ScureBase32Plugin, createGuardrails, verify } from 'otplib';
import QRCode from 'qrcode';
import type { QrCodes, Totp } from './mfas.domain.ts';

const base32 = new ScureBase32Plugin();
/** The reference's secrets are 10 bytes (dgoogauth); otplib's default floor is 16. */
const guardrails = createGuardrails({ MIN_SECRET_BYTES: 10 });

/**
 * TOTP with the reference's parameters (ZITI-FACTS §9.1): HMAC-SHA1, 6 digits, 30 s steps, codes
 * from t−2 … t+2 steps accepted (60 s either side), 10-byte base32 secrets. otplib compares in
 * constant time.
 */
export class OtplibTotp implements Totp {
  newSecret(): string {
    return base32.encode(randomBytes(10), { padding: false });
  }

  async verify(secret: string, code: string, now: Date): Promise<boolean> {
    if (!/^\d{6}$/.test(code)) return false;
    try {
      const result = await verify({
        secret,
        token: code,
        guardrails,
        algorithm: 'sha1',
        digits: 6,
        period: 30,
        epoch: Math.floor(now.getTime() / 1000),
        epochTolerance: 60,
      });
      return result.valid;
    } catch {
      return false;
    }
  }
}

/** 256×256 PNG, medium error correction (ZITI-FACTS §9.1). */
export class PngQrCodes implements QrCodes {
  async png(text: string): Promise<Buffer> {
    return QRCode.toBuffer(text, { type: 'png', width: 256, margin: 1, errorCorrectionLevel: 'M' });
  }
}
