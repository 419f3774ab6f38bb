/**
 * What a platform answers a publish with: its post's id and URL, or one of the failures Pozy reports (with, on Meta
 * platforms, the Graph API's own error).
 */
import type { Rng } from '../faults';
import { ErrorCategory, ErrorSource, META_PLATFORMS, PlatformError } from './pozy-shapes';
import type { TargetRecord } from './state';

export interface Failure {
  message: string;
  category: ErrorCategory;
  source: ErrorSource;
  /** What a Meta platform (facebook, instagram, threads) answered; other platforms' targets carry none. */
  meta: PlatformError;
}

export const AUTH_EXPIRED: Failure = {
  message: 'Token expired; reconnect',
  category: 'auth_expired',
  source: 'user',
  meta: { code: 190, subcode: 463, message: 'Error validating access token: Session has expired' },
};
export const FAILURES: readonly Failure[] = [
  AUTH_EXPIRED,
  {
    message: 'Media format not supported by the platform',
    category: 'platform_rejected',
    source: 'platform',
    meta: { code: 9004, subcode: 2207052, message: 'Only photo or video can be accepted as media type.' },
  },
  {
    message: 'Duplicate content rejected by the platform',
    category: 'user_content',
    source: 'user',
    meta: { code: 506, message: 'Duplicate status message' },
  },
  {
    message: 'The platform answered with an internal error',
    category: 'platform_error',
    source: 'platform',
    meta: { code: 2, message: 'An unexpected error has occurred. Please retry your request later.' },
  },
  {
    message: 'Platform rate limit reached',
    category: 'platform_rate_limit',
    source: 'platform',
    meta: { code: 4, message: 'Application request limit reached' },
  },
  {
    message: 'The account lacks the permission to publish',
    category: 'account_issue',
    source: 'user',
    meta: { code: 10, message: 'Application does not have permission for this action' },
  },
  {
    message: 'Daily publishing quota for this account reached',
    category: 'quota_exhausted',
    source: 'platform',
    meta: { code: 9, subcode: 2207042, message: 'You have reached the maximum number of posts that is allowed for the day.' },
  },
  {
    message: 'Publishing failed inside Pozy',
    category: 'system_error',
    source: 'system',
    meta: { code: 1, message: 'An unknown error occurred' },
  },
];

export function isMetaPlatform(platform: string): boolean {
  return (META_PLATFORMS as readonly string[]).includes(platform);
}

/** A failed target's error fields: message, category, source and, on a Meta platform, `platformError`. */
export function failureFields(
  platform: string,
  failure: Failure,
): Pick<TargetRecord, 'errorMessage' | 'errorCategory' | 'errorSource' | 'platformError'> {
  return {
    errorMessage: failure.message,
    errorCategory: failure.category,
    errorSource: failure.source,
    // Shared, never mutated: the views copy it out.
    platformError: isMetaPlatform(platform) ? failure.meta : undefined,
  };
}

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
