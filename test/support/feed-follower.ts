/** One entry of GET /changes, as the tests read it. */
export interface FeedItem {
  cursor: string;
  type: string;
  id: string;
  sequence: number;
  changedAt: string;
  post?: Record<string, unknown>;
  account?: Record<string, unknown>;
}

/** What a follower keeps: its cursor and its copy, which it can hand to a new follower (a restart). */
export interface FollowerState {
  cursor: string | undefined;
  copy: Map<string, FeedItem>;
}

/**
 * A pull consumer of GET /changes, as a user writes one: it applies each page to its copy (keyed `post:<id>` or
 * `account:<id>`), then stores the page's nextCursor. It records every change that came out of its resource's
 * sequence order, and every cursor that did not grow.
 */
export class FeedFollower {
  readonly state: FollowerState;
  readonly outOfOrder: string[] = [];
  readonly cursorsNotGrowing: string[] = [];
  received = 0;

  constructor(
    private readonly baseUrls: readonly string[],
    state?: FollowerState,
    private readonly headers: Record<string, string> = {},
  ) {
    this.state = state ? { cursor: state.cursor, copy: new Map(state.copy) } : { cursor: undefined, copy: new Map() };
  }

  /** One call (to the replicas in turn); answers how many changes it applied. */
  async poll(waitS = 0, limit = 200, call = this.received): Promise<number> {
    const base = this.baseUrls[call % this.baseUrls.length];
    const query = new URLSearchParams({ limit: String(limit), wait: String(waitS) });
    if (this.state.cursor !== undefined) query.set('after', this.state.cursor);
    const response = await fetch(`${base}/changes?${query.toString()}`, { headers: this.headers });
    const body = (await response.json()) as { data: FeedItem[]; nextCursor: string };
    if (response.status !== 200) throw new Error(`GET /changes answered ${response.status}: ${JSON.stringify(body)}`);
    for (const item of body.data) {
      const key = `${item.type.split('.')[0]}:${item.id}`;
      const had = this.state.copy.get(key);
      if (had && had.sequence >= item.sequence) this.outOfOrder.push(`${key}: ${had.sequence} then ${item.sequence}`);
      this.state.copy.set(key, item);
      if (this.state.cursor !== undefined && BigInt(item.cursor) <= BigInt(this.state.cursor)) this.cursorsNotGrowing.push(item.cursor);
    }
    if (this.state.cursor !== undefined && BigInt(body.nextCursor) < BigInt(this.state.cursor)) this.cursorsNotGrowing.push(body.nextCursor);
    this.state.cursor = body.nextCursor;
    this.received += body.data.length;
    return body.data.length;
  }

  /** Polls until a call answers nothing new. */
  async drain(): Promise<void> {
    let calls = 0;
    while ((await this.poll(0, 1000, calls++)) > 0);
  }
}
