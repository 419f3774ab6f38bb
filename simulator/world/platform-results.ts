/** What a platform answers a publish with: its post's id and URL, or one of the failures Pozy reports. */
import type { Rng } from '../faults';
import type { ErrorSource } from './pozy-shapes';

export interface Failure {
  message: string;
  category: string;
  source: ErrorSource;
}

export const AUTH_EXPIRED: Failure = { message: 'Token expired; reconnect', category: 'auth_expired', source: 'user' };
export const FAILURES: readonly Failure[] = [
  AUTH_EXPIRED,
  { message: 'Media format not supported by the platform', category: 'platform_rejected', source: 'platform' },
  { message: 'Duplicate content rejected by the platform', category: 'user_content', source: 'user' },
  { message: 'The platform answered with an internal error', category: 'platform_error', source: 'platform' },
  { message: 'Platform rate limit reached', category: 'platform_rate_limit', source: 'platform' },
];

/** The id and URL a platform gives a post published there; `rng` is the world's own, the one every id comes from. */
export function platformPost(rng: Rng, platform: string, username: string): { id: string; url: string } {
  // n decimal digits, the first not 0; built nine at a time, as one string per digit made seeding slow.
  const digits = (n: number) => {
    let out = String(1 + rng.int(9));
    let chunk = 0;
    let length = 0;
    for (let i = 1; i < n; i++) {
      chunk = chunk * 10 + rng.int(10);
      length += 1;
      if (length === 9 || i === n - 1) {
        out += String(chunk).padStart(length, '0');
        chunk = 0;
        length = 0;
      }
    }
    return out;
  };
  switch (platform) {
    case 'twitter': {
      const id = digits(19);
      return { id, url: `https://x.com/${username}/status/${id}` };
    }
    case 'linkedin': {
      const id = `urn:li:share:${digits(19)}`;
      return { id, url: `https://www.linkedin.com/feed/update/${id}` };
    }
    case 'instagram': {
      const id = digits(19);
      return { id, url: `https://www.instagram.com/p/${rng.hex(11)}/` };
    }
    case 'facebook': {
      const id = `${digits(15)}_${digits(16)}`;
      return { id, url: `https://www.facebook.com/${id}` };
    }
    case 'tiktok': {
      const id = digits(19);
      return { id, url: `https://www.tiktok.com/@${username}/video/${id}` };
    }
    default: {
      const id = rng.hex(16);
      return { id, url: `https://${platform}.example/${username}/posts/${id}` };
    }
  }
}
