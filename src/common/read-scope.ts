import { WORKSPACE_ID } from './workspace-id';

export const isWorkspaceId = (value: unknown): value is string => typeof value === 'string' && WORKSPACE_ID.test(value);

/** Every workspace: API_TOKENS, ADMIN_TOKEN, open reads, and a token made for every workspace. */
export const ALL_WORKSPACES = '*';

/** The workspaces a reader may read: `'*'` for every one, or a list of ids. */
export type Workspaces = typeof ALL_WORKSPACES | readonly string[];

/** A read cut to no workspace at all: it answers nothing, never everything. */
export const readsNothing = (workspaces: Workspaces): boolean => workspaces !== ALL_WORKSPACES && workspaces.length === 0;

/**
 * What one request's reader may read, as the read guards found it (common/read-access.ts); a handler takes it with
 * `@ReadScope()`. Immutable; serialises as `{ workspaces }`.
 */
export class WorkspaceScope {
  /** The scope of API_TOKENS, ADMIN_TOKEN and open reads. */
  static readonly ALL = new WorkspaceScope(ALL_WORKSPACES);

  private readonly allowed: ReadonlySet<string> | undefined;

  private constructor(readonly workspaces: Workspaces) {
    this.allowed = workspaces === ALL_WORKSPACES ? undefined : new Set(workspaces);
    Object.freeze(this);
  }

  /** `'*'`, or the given ids (repeats dropped, order kept); an empty list is a scope that reads nothing. */
  static of(workspaces: Workspaces): WorkspaceScope {
    return workspaces === ALL_WORKSPACES ? WorkspaceScope.ALL : new WorkspaceScope(Object.freeze([...new Set(workspaces)]));
  }

  /** Whether this reader may read every workspace, those created later included. */
  get all(): boolean {
    return this.allowed === undefined;
  }

  allows(workspace: string): boolean {
    return this.allowed === undefined || this.allowed.has(workspace);
  }

  /**
   * The workspaces a read should cover: what the request asked for (`requested`, e.g. a `workspace` parameter),
   * cut to what this reader may read.
   * - Nothing asked: `'*'` for a reader of every workspace, else its own list.
   * - A list asked: the ids of it this reader may read, in the order asked, without repeats; `[]` when none is, which
   *   the caller answers as an empty result (or a 404 for one resource), never as "no filter".
   */
  narrow(requested?: readonly string[]): string[] | typeof ALL_WORKSPACES {
    if (requested === undefined) return this.allowed === undefined ? ALL_WORKSPACES : [...this.workspaces];
    return [...new Set(requested)].filter((workspace) => this.allows(workspace));
  }

  toJSON(): { workspaces: Workspaces } {
    return { workspaces: this.workspaces };
  }
}
