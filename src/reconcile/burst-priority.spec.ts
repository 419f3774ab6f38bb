import { BurstPriority } from './reconcile-dispatcher.service';

describe('BurstPriority', () => {
  it("puts a quiet workspace's read ahead of a bursting one's", () => {
    const priority = new BurstPriority();
    const now = 1_000_000;
    const burst = Array.from({ length: 10_000 }, () => priority.next('a', now));
    expect(burst[0]).toBe(0);
    expect(burst[9_999]).toBe(9_999);
    // B's single read comes next, whatever A has waiting.
    expect(priority.next('b', now)).toBe(0);
    // A's burst weighs less as time passes: half after 10 s.
    expect(priority.next('a', now + 10_000)).toBe(5_000);
  });
});
