import { ALL_WORKSPACES, isWorkspaceId, WorkspaceScope } from './read-scope';

describe('WorkspaceScope', () => {
  const scoped = WorkspaceScope.of(['acme-eu', 'acme-us']);

  describe('narrow', () => {
    it.each<[string, WorkspaceScope, string[] | undefined, string[] | '*']>([
      ['every workspace, nothing asked: every workspace', WorkspaceScope.ALL, undefined, '*'],
      ['every workspace, a list asked: that list', WorkspaceScope.ALL, ['acme-eu', 'beta'], ['acme-eu', 'beta']],
      ['every workspace, repeats asked: once each', WorkspaceScope.ALL, ['beta', 'acme-eu', 'beta'], ['beta', 'acme-eu']],
      ['scoped, nothing asked: its own list', scoped, undefined, ['acme-eu', 'acme-us']],
      ['scoped, a part of its list asked: that part', scoped, ['acme-us'], ['acme-us']],
      ['scoped, some outside asked: only the allowed, in the order asked', scoped, ['beta', 'acme-us', 'acme-eu'], ['acme-us', 'acme-eu']],
      ['scoped, only outside asked: nothing', scoped, ['beta', 'gamma'], []],
      ['scoped, an empty list asked: nothing', scoped, [], []],
      ['every workspace, an empty list asked: nothing', WorkspaceScope.ALL, [], []],
      ['a scope of no workspace, nothing asked: nothing', WorkspaceScope.of([]), undefined, []],
    ])('%s', (_name, scope, requested, expected) => {
      expect(scope.narrow(requested)).toEqual(expected);
    });

    it('answers a copy: a caller changing it changes nothing of the scope', () => {
      const narrowed = scoped.narrow() as string[];
      narrowed.push('beta');
      expect(scoped.narrow()).toEqual(['acme-eu', 'acme-us']);
      expect(scoped.allows('beta')).toBe(false);
    });

    it('never answers "*" for a scoped reader, nor for one asking for a list', () => {
      expect(scoped.narrow()).not.toBe(ALL_WORKSPACES);
      expect(WorkspaceScope.ALL.narrow(['*'])).toEqual(['*']);
      expect(scoped.narrow(['*'])).toEqual([]);
    });
  });

  it('allows its workspaces only, or every one', () => {
    expect([scoped.allows('acme-eu'), scoped.allows('acme-us'), scoped.allows('acme'), scoped.allows('*')]).toEqual([true, true, false, false]);
    expect(WorkspaceScope.ALL.allows('anything')).toBe(true);
    expect([scoped.all, WorkspaceScope.ALL.all]).toEqual([false, true]);
  });

  it('serialises as { workspaces }, the form the brief of the guards names', () => {
    expect(JSON.parse(JSON.stringify(scoped))).toEqual({ workspaces: ['acme-eu', 'acme-us'] });
    expect(JSON.parse(JSON.stringify(WorkspaceScope.ALL))).toEqual({ workspaces: '*' });
  });

  it('keeps one of each id, and "*" as every workspace', () => {
    expect(WorkspaceScope.of(['b', 'a', 'b']).workspaces).toEqual(['b', 'a']);
    expect(WorkspaceScope.of('*')).toBe(WorkspaceScope.ALL);
  });

  it('is immutable', () => {
    expect(Object.isFrozen(scoped)).toBe(true);
    expect(Object.isFrozen(scoped.workspaces)).toBe(true);
  });
});

describe('isWorkspaceId', () => {
  it.each(['default', 'acme-eu', 'a', '0', 'x1-2', 'a'.repeat(63)])('takes %s', (id) => expect(isWorkspaceId(id)).toBe(true));
  it.each(['', '-acme', 'Acme', 'acme_eu', 'acme.eu', 'acme eu', '*', 'a'.repeat(64), 'é', 'acme\n'])('refuses %j', (id) =>
    expect(isWorkspaceId(id)).toBe(false),
  );
  it('refuses what is not a string', () => {
    expect([isWorkspaceId(1), isWorkspaceId(null), isWorkspaceId(['a'])]).toEqual([false, false, false]);
  });
});
