/**
 * What random posts say and carry, for random-activity.ts and existing-workspace.ts: content (some of it in German,
 * Spanish or Russian) and the details Pozy's posts have: titles, media of every type, tags, hashtags, mentions,
 * visibility, timezone, metadata, and on a few posts the queue fields. Every choice comes from the Rng given, so
 * replays stay exact. Vocabulary strings and small arrays are shared between posts, to keep a 100,000-post world
 * small; records never change them in place.
 */
import type { Rng } from '../faults';
import type { MediaItem, MediaType, PostDetails, Recycling, Visibility } from './pozy-shapes';
import type { WorldState } from './state';

const WORDS: Record<'en' | 'de' | 'es' | 'ru', readonly string[]> = {
  en: ['spring', 'sale', 'launch', 'today', 'new', 'team', 'update', 'coffee', 'studio', 'weekly', 'tips', 'demo'],
  de: ['Frühling', 'Angebot', 'heute', 'neu', 'Team', 'Kaffee', 'Woche', 'Tipps', 'Start', 'jetzt', 'für', 'alle', 'Grüße'],
  es: ['primavera', 'oferta', 'hoy', 'nuevo', 'equipo', 'café', 'semana', 'consejos', 'lanzamiento', 'ahora', 'para', 'todos', 'año'],
  ru: ['весна', 'скидка', 'сегодня', 'новый', 'команда', 'кофе', 'неделя', 'советы', 'запуск', 'сейчас', 'для', 'всех'],
};
/** Cumulative shares of the languages (the rest is English). */
const LANGUAGES = [
  ['de', 0.07],
  ['es', 0.14],
  ['ru', 0.2],
] as const;

const TITLE_OPENERS = ['Spring', 'Weekly', 'Behind the scenes:', 'New', 'Big', 'Our', 'Last call:', 'Meet the'] as const;
const TITLE_TOPICS = ['sale', 'product launch', 'team update', 'coffee tips', 'studio tour', 'demo day', 'release notes', 'customer story'] as const;
/** Every opener with every topic, made once: posts share the strings. */
const TITLES = TITLE_OPENERS.flatMap((opener) => TITLE_TOPICS.map((topic) => `${opener} ${topic}`));
/** `A-1000` to `A-9999`, each made the first time it is drawn and then shared. */
const CRM_IDS: string[] = [];
const TAGS = ['promo', 'product', 'behind-the-scenes', 'event', 'hiring', 'blog', 'seasonal', 'customer-story'] as const;
const HASHTAGS = ['spring', 'sale', 'newproduct', 'teamwork', 'coffee', 'smallbusiness', 'marketing', 'launchday', 'tips'] as const;
const MENTIONS = ['pozyhq', 'acme', 'janedoe', 'studio.north', 'coffee_lab', 'maria.garcia'] as const;
const TIMEZONES = ['UTC', 'Europe/Berlin', 'Europe/Madrid', 'Europe/Moscow', 'America/New_York', 'America/Los_Angeles', 'Asia/Tokyo'] as const;
const CAMPAIGNS = ['spring', 'summer', 'black-friday', 'launch', 'evergreen', 'hiring'] as const;
const ALT_TEXTS = ['Product photo on a white background', 'The team at the studio', 'A cup of coffee on a desk', 'Chart of this month'] as const;
/** Cumulative shares of the media types. */
const MEDIA_MIX: readonly (readonly [MediaType, number])[] = [
  ['image', 0.55],
  ['video', 0.8],
  ['gif', 0.9],
  ['document', 1],
];
const EXTENSIONS: Record<MediaType, string> = { image: 'jpg', video: 'mp4', gif: 'gif', document: 'pdf' };

export function randomContent(rng: Rng): string {
  const roll = rng.next();
  const words = WORDS[LANGUAGES.find(([, share]) => roll < share)?.[0] ?? 'en'];
  const count = 3 + rng.int(6);
  let text = rng.pick(words);
  for (let i = 1; i < count; i++) text += ` ${rng.pick(words)}`;
  return `${text[0].toUpperCase()}${text.slice(1)} #${rng.int(1000)}`;
}

/**
 * A random post's details, for a post of `profileId`. `recycledFrom` answers an earlier post (of the profile, if it
 * can), which a queued post with recycling may be a copy of; it is asked only then.
 */
export function randomDetails(state: WorldState, rng: Rng, profileId: string, recycledFrom?: () => string | undefined): PostDetails {
  const title = rng.chance(0.85) ? rng.pick(TITLES) : undefined;
  const media = rng.int(4);
  let mediaItems: MediaItem[] | undefined;
  if (media > 0) {
    // Sized up front: an array grown by push keeps room for 17.
    mediaItems = new Array<MediaItem>(media);
    for (let i = 0; i < media; i++) mediaItems[i] = randomMedia(rng);
  }
  const tagCount = rng.int(4);
  const tags = tagCount > 0 ? pickDistinct(TAGS, tagCount, rng) : undefined;
  const hashtags = rng.chance(0.6) ? pickDistinct(HASHTAGS, 1 + rng.int(3), rng) : undefined;
  const mentions = rng.chance(0.2) ? pickDistinct(MENTIONS, 1 + rng.int(2), rng) : undefined;
  const roll = rng.next();
  const visibility: Visibility | undefined = roll < 0.85 ? 'public' : roll < 0.91 ? 'private' : roll < 0.95 ? 'unlisted' : undefined;
  let metadata: Record<string, unknown> | undefined;
  if (rng.chance(0.5)) {
    const crm = rng.int(9000);
    metadata = { crmId: (CRM_IDS[crm] ??= `A-${1000 + crm}`), campaign: rng.pick(CAMPAIGNS) };
  }
  const zone = rng.int(10);
  const timezone = zone < TIMEZONES.length ? TIMEZONES[zone] : undefined;
  let queuedFromProfile: string | undefined;
  let queueId: string | undefined;
  let recycling: Recycling | undefined;
  let recycledFromPostId: string | undefined;
  if (rng.chance(0.04)) {
    queuedFromProfile = profileId;
    queueId = state.queueIds.get(profileId);
    if (queueId === undefined) {
      queueId = state.rng.objectId();
      state.queueIds.set(profileId, queueId);
    }
    if (rng.chance(0.4)) {
      recycling = { enabled: rng.chance(0.9), intervalDays: rng.pick([7, 14, 30, 60]) };
      if (recycledFrom !== undefined && rng.chance(0.5)) recycledFromPostId = recycledFrom();
    }
  }
  // Every key, in one order (absent ones undefined, which the views omit): one compact shape for every post.
  return { title, mediaItems, tags, hashtags, mentions, visibility, metadata, timezone, recycling, recycledFromPostId, queuedFromProfile, queueId };
}

/**
 * A random medium: its URLs are made when read, from two random numbers, as 100,000 posts' worth of URL strings
 * took tens of MB. It reads like any MediaItem (the views copy it into a plain one).
 */
class RandomMedia implements MediaItem {
  constructor(
    readonly type: MediaType,
    private readonly high: number,
    private readonly low: number,
    readonly altText: string | undefined,
  ) {}

  private get name(): string {
    return `${this.high.toString(16).padStart(8, '0')}${this.low.toString(16).padStart(8, '0')}`;
  }

  get url(): string {
    return `https://cdn.pozy.ai/media/${this.name}.${EXTENSIONS[this.type]}`;
  }

  get thumbnail(): string | undefined {
    return this.type === 'video' ? `https://cdn.pozy.ai/media/${this.name}-thumb.jpg` : undefined;
  }
}

function randomMedia(rng: Rng): MediaItem {
  const roll = rng.next();
  const type = MEDIA_MIX.find(([, share]) => roll < share)![0];
  // 30 bits each: small integers, stored without a box.
  const high = rng.uint32() >>> 2;
  const low = rng.uint32() >>> 2;
  return new RandomMedia(type, high, low, type === 'image' && rng.chance(0.4) ? rng.pick(ALT_TEXTS) : undefined);
}

/** Arrays `pickDistinct` made, by the indexes drawn: shared by every post drawing the same ones (never changed). */
const picked = new Map<readonly unknown[], Map<number, unknown[]>>();

/** `count` (at most 3) distinct items of `items` (at most 16), in the order drawn. */
function pickDistinct<T>(items: readonly T[], count: number, rng: Rng): T[] {
  const indexes: number[] = [];
  while (indexes.length < count) {
    const index = rng.int(items.length);
    if (!indexes.includes(index)) indexes.push(index);
  }
  let key = count;
  for (const index of indexes) key = key * 16 + index;
  let cache = picked.get(items);
  if (!cache) picked.set(items, (cache = new Map<number, unknown[]>()));
  let out = cache.get(key) as T[] | undefined;
  if (!out) cache.set(key, (out = indexes.map((i) => items[i])));
  return out;
}
