import { Html, html, raw } from './html';
import { PAGE_DEAD_LETTERS } from '../health/status-snapshot.service';
import { PageDeadLetter, StatusPageData } from './status-page.service';

/** How often the page reloads itself (by script, or by a <noscript> meta refresh). */
export const REFRESH_SECONDS = 15;

/**
 * Only this response's own inline style and script run (the nonce), the replay calls go to this origin, and
 * nothing else is loaded: no external assets, no frames, no plugins, no form posts elsewhere.
 */
export const contentSecurityPolicy = (nonce: string): string =>
  [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');

// Drawn in viewBox units and stretched to the panel's width; the labels are HTML, so they never stretch.
const CHART = { width: 600, height: 100, slot: 10, bar: 8 };

const count = (n: number) => n.toLocaleString('en-US');
/** What the public page shows in place of an id or an error text. */
const HIDDEN = html`<span class="muted">hidden</span>`;
/** PostgreSQL's estimates (see SyncStatus.estimated) read "≈ 900,000". */
const APPROX = '≈ ';

function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

const utc = (date: Date) => `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
const time = (date: Date | null, empty = 'never') => (date ? html`<time datetime="${date.toISOString()}">${utc(date)}</time>` : html`${empty}`);
const ago = (date: Date, now: Date) => `${duration(Math.max(0, now.getTime() - date.getTime()))} ago`;

function card(label: string, id: string, figure: string, detail: Html | string, tone = ''): Html {
  return html`<div class="card ${tone}"><h3>${label}</h3><p class="figure" id="${id}">${figure}</p><p class="detail">${detail}</p></div>`;
}

function eventsChart({ value: minutes, estimated }: StatusPageData['eventsPerMinute']): Html {
  const about = estimated ? APPROX : '';
  const busiest = Math.max(0, ...minutes.map((m) => m.count));
  const max = Math.max(1, busiest);
  const total = minutes.reduce((sum, m) => sum + m.count, 0);
  const bars = minutes.map((m, i) => {
    // Empty minutes keep a 1-unit stub so the hour still reads as sixty slots.
    const height = m.count === 0 ? 1 : Math.max(2, Math.round((m.count / max) * CHART.height));
    const label = `${utc(m.minute).slice(11, 16)} UTC: ${count(m.count)} event${m.count === 1 ? '' : 's'}`;
    return html`<rect class="${m.count === 0 ? 'bar empty' : 'bar'}" x="${i * CHART.slot + 1}" y="${CHART.height - height}" width="${CHART.bar}" height="${height}" data-minute="${m.minute.toISOString()}" data-count="${m.count}"><title>${label}</title></rect>`;
  });
  return html`
    <p class="detail">${about}${count(total)} events received in the last hour; the busiest minute had ${about}${count(busiest)}.${
      estimated ? ' Five-minute slices too busy to read whole on every load are extrapolated from their first events.' : ''
    }</p>
    <svg id="events-chart" class="chart" viewBox="0 0 ${CHART.width} ${CHART.height}" preserveAspectRatio="none" role="img"
         aria-label="${`Events received per minute over the last hour: ${count(total)} in all, at most ${count(busiest)} a minute`}">
      ${bars}
    </svg>
    <div class="ticks" aria-hidden="true"><span>60 min ago</span><span>30 min ago</span><span>now</span></div>`;
}

/** This replica's primary and its spool: what a failover shows an operator (docs/operations.md#failover). */
function databaseCard({ database, spool }: StatusPageData['status'], now: Date): Html {
  const { state, since, changes, withoutPrimarySeconds, connectionsDiscarded, lastChange } = database;
  const discarded = Object.values(connectionsDiscarded).reduce((sum, n) => sum + n, 0);
  const figure = state === 'writable' ? 'writable' : state === 'read_only' ? 'read-only' : 'unreachable';
  const waiting =
    spool.oldestPendingAgeMs === null ? 'none in the spool' : `${count(spool.pending)} in the spool, oldest ${duration(spool.oldestPendingAgeMs)}`;
  const last = lastChange ? html`; last ${lastChange.kind} ${ago(lastChange.at, now)}` : '';
  const detail = html`${state === 'writable' ? 'primary takes writes' : html`no writable primary for ${ago(since, now).replace(' ago', '')}`}; ${count(changes.failover)} failovers, ${count(changes.restart)} restarts seen${last}; ${duration(withoutPrimarySeconds * 1000)} without a writable primary; ${count(discarded)} connections discarded; ${waiting}`;
  return card('Database', 'database', figure, detail, state !== 'writable' ? 'bad' : spool.pending > 0 ? 'warn' : '');
}

/** Shown while a release's background data migration runs (and for a day after it ends). */
function backgroundMigrationsPanel(migrations: StatusPageData['status']['backgroundMigrations'], now: Date): Html {
  const shown = migrations.filter((m) => m.state === 'running' || (m.finishedAt && now.getTime() - m.finishedAt.getTime() < 86_400_000));
  if (shown.length === 0) return html``;
  const rows = shown.map((m) => {
    const share = m.rowsTotal ? Math.min(100, Math.round((m.rowsDone / Math.max(1, m.rowsTotal)) * 100)) : null;
    const progress = `${count(m.rowsDone)} of about ${m.rowsTotal === null ? '?' : count(m.rowsTotal)} rows${share === null ? '' : ` (${share} %)`}`;
    return html`<tr data-migration="${m.name}"><td class="mono">${m.name}</td><td><span class="badge ${m.state === 'done' ? 'succeeded' : 'running'}">${m.state}</span></td><td>${progress}</td><td>${m.finishedAt ? time(m.finishedAt) : m.lastError ? html`<span class="error-text">${m.lastError}</span>` : ago(m.updatedAt, now)}</td></tr>`;
  });
  return html`
    <section class="panel" aria-labelledby="background-migrations-title">
      <h2 id="background-migrations-title">Background data migrations</h2>
      <p class="detail">A release's change to every row of a table, made in batches by one worker after the upgrade; reads and writes go on meanwhile.</p>
      <table id="background-migrations">
        <thead><tr><th>Migration</th><th>State</th><th>Progress</th><th>Last batch or end</th></tr></thead>
        <tbody>${rows}</tbody>
      </table>
    </section>`;
}

/** Every workspace in one line, whatever their number; one workspace's detail is GET /admin/workspaces/:id. */
function workspacesPanel(workspaces: StatusPageData['status']['workspaces']): Html {
  if (workspaces.total <= 1 && workspaces.webhooksFailing === 0) return html``;
  const states = Object.entries(workspaces.byState)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${count(n)} ${state}`)
    .join(', ');
  const failing = workspaces.failing.filter((id): id is string => id !== null);
  return html`
    <section class="panel" aria-labelledby="workspaces-title">
      <h2 id="workspaces-title">Workspaces</h2>
      <p class="detail" id="workspaces-summary">${count(workspaces.total)} workspaces: ${states}.
        ${workspaces.webhooksFailing > 0 ? html`<span class="error-text">${count(workspaces.webhooksFailing)} managed webhook${workspaces.webhooksFailing === 1 ? '' : 's'} failing${failing.length > 0 ? `: ${failing.join(', ')}` : ''}.</span>` : 'Every managed webhook healthy.'}
        ${workspaces.furthestBehind.length > 0 ? `Furthest behind: ${workspaces.furthestBehind.map((w) => `${w.id ?? 'hidden'} (${duration(w.oldestPendingAgeMs)})`).join(', ')}.` : ''}
        Each one's detail: GET /admin/workspaces/:id.</p>
    </section>`;
}

function lastRun(run: StatusPageData['status']['backfill']['lastRun']): Html {
  if (!run) return html`<p class="muted" id="backfill-last-run">No backfill has run yet.</p>`;
  return html`
    <dl class="facts" id="backfill-last-run">
      <dt>Status</dt><dd><span class="badge ${run.status}">${run.status}</span></dd>
      <dt>Started</dt><dd>${time(run.startedAt)}</dd>
      <dt>Finished</dt><dd>${time(run.finishedAt, 'still running')}</dd>
      <dt>Events recovered</dt><dd>${count(run.eventsRecovered)}</dd>
      ${run.error ? html`<dt>Error</dt><dd class="error-text">${run.error}</dd>` : ''}
    </dl>`;
}

/** The import of the workspace on the first start: a progress bar while it runs, its outcome after. */
function importPanel(run: StatusPageData['status']['import'], now: Date): Html {
  const states: Record<string, string> = {
    pending: 'Waiting for a worker to start it (INITIAL_IMPORT=auto).',
    not_needed: 'Not needed: a full sweep has already listed the workspace.',
    off: 'Off (INITIAL_IMPORT=off): run POST /admin/sweep to list the workspace.',
  };
  if (run.runId === null) return html`<p class="muted" id="import-state">${states[run.status] ?? run.status}</p>`;
  const posts = run.progress.posts;
  const pass = run.progress.currentPass;
  const accounts = run.progress.accounts;
  const total = posts.total ?? 0;
  const listing = run.status === 'running' && (run.phase === 'accounts' || run.phase === 'posts');
  const phases: Record<string, string> = {
    accounts: 'listing accounts',
    posts:
      run.pass > 1
        ? `listing posts again (pass ${run.pass}): Pozy's count at the end of the last listing differed from what it saw`
        : 'listing posts',
    'missing-accounts': 'checking for accounts Pozy no longer lists',
    'missing-posts': 'checking for posts Pozy no longer lists',
    done: 'done',
  };
  return html`
    <p class="detail"><span class="badge ${run.status}">${run.status}</span> ${run.status === 'running' ? phases[run.phase] : ''}
      ${run.status === 'running' ? '' : html`· finished ${time(run.finishedAt)}`}</p>
    ${
      listing
        ? html`<progress id="import-progress" max="${Math.max(1, total)}" value="${Math.min(posts.done, Math.max(1, total))}"
             aria-label="${`Posts imported: ${count(posts.done)} of ${total ? count(total) : 'an unknown number'}`}">${count(posts.done)}</progress>`
        : ''
    }
    <dl class="facts" id="import-facts">
      <dt>Posts</dt><dd>${count(posts.done)}${posts.total === null ? '' : ` of ${count(posts.total)}`}</dd>
      ${
        run.pass > 1 && listing
          ? html`<dt>Pass ${run.pass}</dt><dd id="import-pass">${count(pass.done)}${pass.total === null ? '' : ` of ${count(pass.total)}`} listed again (each post counted once above)</dd>`
          : ''
      }
      <dt>Accounts</dt><dd>${count(accounts.done)}${accounts.total === null ? '' : ` of ${count(accounts.total)}`}</dd>
      ${run.progress.postsPerSecond === null ? '' : html`<dt>Rate</dt><dd>${count(Math.round(run.progress.postsPerSecond))} posts/s</dd>`}
      ${run.progress.etaSeconds === null ? '' : html`<dt>Time left</dt><dd>about ${duration(run.progress.etaSeconds * 1000)}</dd>`}
      <dt>Started</dt><dd>${time(run.startedAt)} (${ago(run.startedAt, now)})</dd>
      <dt>Found</dt><dd>posts ${count(run.posts.created)} new, ${count(run.posts.changed)} changed, ${count(run.posts.deleted)} gone; accounts ${count(run.accounts.created)} new</dd>
      ${run.lastError ? html`<dt>Waiting</dt><dd class="error-text">${run.lastError}</dd>` : ''}
      ${run.error ? html`<dt>Error</dt><dd class="error-text">${run.error}</dd>` : ''}
    </dl>`;
}

/** The deployment's one Pozy budget: how much of the window is spent, and whether another client shares the key. */
function budgetPanel(budget: StatusPageData['status']['pozyBudget']): Html {
  const window = budget.windowMs === 60_000 ? 'minute' : duration(budget.windowMs);
  return html`
    <dl class="facts" id="pozy-budget">
      <dt>Used</dt><dd>${count(budget.usedInWindow)} of ${count(budget.effectiveLimit)} requests in the last ${window}</dd>
      <dt>Limit</dt><dd>${count(budget.limit)} per ${window}, every replica together${
        budget.effectiveLimit < budget.limit ? ` (now ${count(budget.effectiveLimit)}: leaving Pozy's limit to others)` : ''
      }</dd>
      <dt>Other clients</dt><dd>${budget.pozy ? `${count(budget.pozy.othersUsing)} of Pozy's ${count(budget.pozy.limit)} used by others` : 'none seen'}</dd>
      ${budget.pausedUntil ? html`<dt>Paused</dt><dd class="error-text">until ${time(budget.pausedUntil)} (Pozy answered 429)</dd>` : ''}
      <dt>Waiting</dt><dd>${budget.waiting.length > 0 ? budget.waiting.join(', ') : 'no lane'}</dd>
    </dl>`;
}

function gapReport(gaps: StatusPageData['status']['backfill']['gaps']): Html {
  if (gaps.length === 0) return html`<p class="muted" id="gap-report">No gaps in the last 48 h: every event Pozy logged reached us.</p>`;
  const rows = [...gaps].reverse().map((g) => html`<tr><td>${time(g.hour)}</td><td class="num">${count(g.events)}</td></tr>`);
  return html`
    <table id="gap-report">
      <thead><tr><th>Hour</th><th class="num">Events recovered</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>`;
}

function deadLetterRow(letter: PageDeadLetter): Html {
  return html`
    <tr data-dead-letter="${letter.id}">
      <td><span class="tag">${letter.queue}</span> ${letter.kind}</td>
      <td class="mono">${
        letter.timeline
          ? html`<a href="${letter.timeline}" data-timeline="${letter.timeline}">${letter.subject ?? HIDDEN}</a>`
          : (letter.subject ?? HIDDEN)
      }</td>
      <td>${letter.reason}${letter.error === null ? '' : html`<div class="error-text mono">${letter.error}</div>`}</td>
      <td class="num">${letter.attempts}</td>
      <td>${time(letter.deadAt)}</td>
      <td class="state">${
        letter.replayedAt
          ? html`<span class="badge healthy">replayed</span> ${time(letter.replayedAt)}`
          : letter.resolution
            ? html`<span class="badge healthy">resolved</span> ${letter.resolution}`
            : html`<span class="badge failing">waiting</span>`
      }</td>
      <td class="actions">
        <button type="button" class="replay" data-letter-id="${letter.id}" disabled>Replay</button>
        <span class="result" data-result role="status"></span>
      </td>
    </tr>`;
}

function deadLetters(data: StatusPageData): Html {
  const { delivery, ack } = data.status.deadLetters;
  const table =
    data.deadLetters.length === 0
      ? html`<p class="muted">No dead letters.</p>`
      : html`
        <table id="dead-letters">
          <thead><tr><th>Queue, kind</th><th>Resource or event</th><th>Reason and error</th><th class="num">Attempts</th><th>Dead since</th><th>State</th><th></th></tr></thead>
          <tbody>${data.deadLetters.map(deadLetterRow)}</tbody>
        </table>
        <pre id="timeline-view" class="mono" hidden></pre>`;
  return html`
    <section class="panel" aria-labelledby="dead-letters-title">
      <h2 id="dead-letters-title">Dead letters</h2>
      <p class="detail">Not replayed: ${count(delivery)} in the delivery queue (reconciles and notifications given up on), ${count(ack)} in the acknowledgment queue (this replica's spool). Below, newest first: at most ${PAGE_DEAD_LETTERS} letters of both queues, replayed ones included.</p>
      <form id="token-form" class="token" autocomplete="off" hidden>
        <label for="admin-token">Admin token</label>
        <input id="admin-token" type="password" placeholder="paste ADMIN_TOKEN to replay" autocomplete="off" spellcheck="false">
        <button type="submit">Use token</button>
        <button type="button" id="forget-token">Forget</button>
        <span id="token-state" class="muted" role="status"></span>
      </form>
      <noscript><p class="muted">Replaying from this page needs JavaScript; without it, <code>POST /admin/dead-letters/:id/replay</code> with the admin token.</p></noscript>
      ${table}
    </section>`;
}

function subscribers(list: StatusPageData['status']['notifications']['subscribers'], redacted: boolean): Html {
  if (list.length === 0) return html`<p class="muted">No change-notification subscriptions.</p>`;
  const lastError = (health: (typeof list)[number]['health']) =>
    health.lastError
      ? html`<span class="error-text">${health.lastError}</span><div class="detail">${time(health.lastFailureAt, '')}</div>`
      : redacted && health.lastFailureAt
        ? html`${HIDDEN}<div class="detail">${time(health.lastFailureAt, '')}</div>`
        : html`<span class="muted">none</span>`;
  const rows = list.map(
    (s) => html`
      <tr${s.id === null ? '' : html` data-subscriber="${s.id}"`}>
        <td class="mono">${s.origin ?? HIDDEN}</td>
        <td><span class="badge ${s.health.state}">${s.health.state}</span>${s.health.pausedReason ? html`<div class="detail">${s.health.pausedReason}</div>` : ''}</td>
        <td class="num">${count(s.health.pending)}</td>
        <td class="num">${count(s.health.deadLetters)}</td>
        <td>${time(s.health.lastSuccessAt)}</td>
        <td>${lastError(s.health)}</td>
      </tr>`,
  );
  return html`
    <table id="subscribers">
      <thead><tr><th>Subscriber</th><th>State</th><th class="num">Pending</th><th class="num">Dead letters</th><th>Last success</th><th>Last error</th></tr></thead>
      <tbody>${rows}</tbody>
    </table>`;
}

/** The whole page; every value interpolated by `html` is escaped. */
export function renderStatusPage(data: StatusPageData, nonce: string): string {
  const { status, apiCalls, generatedAt: now } = data;
  const lagMs = status.queue.oldestPendingAgeMs;
  const saved = apiCalls.coalesced + apiCalls.skipped;
  const unreplayed = status.deadLetters.delivery + status.deadLetters.ack;
  const about = (path: string) => (status.estimated.includes(path) ? APPROX : '');
  const figure = (path: string, n: number) => `${about(path)}${count(n)}`;
  const paused = status.notifications.pausedSubscriptions;
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>pozy-sync status</title>
<link rel="icon" href="data:,">
<noscript><meta http-equiv="refresh" content="${REFRESH_SECONDS}"></noscript>
<style nonce="${nonce}">${raw(STYLE)}</style>
</head>
<body>
<header>
  <h1>pozy-sync <span class="muted">status</span></h1>
  <p class="detail">As of ${time(now)}. Refreshes every ${REFRESH_SECONDS} s<span id="refresh-state"></span>.
    <a href="/sync/status">JSON</a> · <a href="/metrics">metrics</a> · <a href="/docs">API docs</a></p>
  ${
    status.redacted
      ? html`<p class="detail" id="redacted-note">Public view: resource ids, subscribers' addresses and error texts are hidden. A request with a read token (API_TOKENS or ADMIN_TOKEN) shows them.</p>`
      : ''
  }
</header>
<main>
  <section class="cards" aria-label="Key figures">
    ${card('Sync lag', 'lag', lagMs === null ? '0 s' : duration(lagMs), lagMs === null ? 'no read pending from Pozy' : 'age of the oldest pending read', lagMs !== null && lagMs > 60_000 ? 'warn' : '')}
    ${card('Pending reads', 'pending-reads', figure('queue.pendingReads', status.queue.pendingReads), `${figure('queue.jobs', status.queue.jobs)} jobs queued, ${figure('queue.failingJobs', status.queue.failingJobs)} failing`, status.queue.failingJobs > 0 ? 'warn' : '')}
    ${card('Last synced', 'last-synced', status.mirror.lastSyncedAt ? ago(status.mirror.lastSyncedAt, now) : 'never', html`${time(status.mirror.lastSyncedAt)}; ${figure('mirror.posts', status.mirror.posts)} posts, ${figure('mirror.accounts', status.mirror.accounts)} accounts mirrored`)}
    ${card('Events, last hour', 'events-last-hour', figure('events.lastHour', status.events.lastHour), `${figure('events.received', status.events.received)} stored in all`)}
    ${card('Pozy API calls saved', 'api-calls-saved', count(saved), html`${count(apiCalls.coalesced)} coalesced, ${count(apiCalls.skipped)} skipped; since this process started (${time(apiCalls.countingSince)})`)}
    ${card('Pozy reads made', 'pozy-reads', count(apiCalls.pozyReads), html`post and account reads, retries included; ${count(apiCalls.pozyRequests)} Pozy requests in all since this process started`)}
    ${card('Dead letters', 'dead-letter-count', figure('deadLetters.delivery', unreplayed), `waiting for a replay: ${figure('deadLetters.delivery', status.deadLetters.delivery)} delivery, ${count(status.deadLetters.ack)} ack`, unreplayed > 0 ? 'bad' : '')}
    ${card('Notifications pending', 'notifications-pending', figure('notifications.pending', status.notifications.pending), `${status.notifications.oldestPendingAgeMs === null ? 'none waiting' : `oldest waiting ${duration(status.notifications.oldestPendingAgeMs)}`}${paused > 0 ? `; ${count(paused)} subscriber${paused === 1 ? '' : 's'} paused` : ''}`, paused > 0 ? 'warn' : '')}
    ${databaseCard(status, now)}
  </section>
  ${status.estimated.length > 0 ? html`<p class="detail" id="estimates-note">${APPROX}PostgreSQL's estimate: the rows behind it are too many to count on every load.</p>` : ''}

  <div class="columns">
    <section class="panel" aria-labelledby="import-title">
      <h2 id="import-title">Import of the workspace</h2>
      ${importPanel(status.import, now)}
    </section>
    <section class="panel" aria-labelledby="budget-title">
      <h2 id="budget-title">Pozy API budget</h2>
      ${budgetPanel(status.pozyBudget)}
    </section>
  </div>

  ${workspacesPanel(status.workspaces)}

  ${backgroundMigrationsPanel(status.backgroundMigrations, now)}

  <section class="panel" aria-labelledby="chart-title">
    <h2 id="chart-title">Events per minute, last hour</h2>
    ${eventsChart(data.eventsPerMinute)}
  </section>

  <div class="columns">
    <section class="panel" aria-labelledby="gaps-title">
      <h2 id="gaps-title">Backfill gap report</h2>
      <p class="detail">Events Pozy logged that never reached us, recovered by the backfill, per hour (last 48 h).</p>
      ${gapReport(status.backfill.gaps)}
    </section>
    <section class="panel" aria-labelledby="backfill-title">
      <h2 id="backfill-title">Last backfill run</h2>
      ${lastRun(status.backfill.lastRun)}
    </section>
  </div>

  ${deadLetters(data)}

  <section class="panel" aria-labelledby="subscribers-title">
    <h2 id="subscribers-title">Subscribers</h2>
    ${subscribers(status.notifications.subscribers, status.redacted)}
  </section>
</main>
<script nonce="${nonce}">${raw(SCRIPT)}</script>
</body>
</html>
`;
  return page.value;
}

const STYLE = `
:root { color-scheme: light; --bg: #f5f6f8; --card: #fff; --line: #e2e5ea; --text: #1d232b; --muted: #66707c;
  --accent: #3d6fb6; --ok: #1f7a4d; --okbg: #e5f4ec; --warn: #8a5a00; --warnbg: #fbf1dc; --bad: #a3262a; --badbg: #fbe7e7; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, main { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 20px; padding-bottom: 4px; }
h1 { font-size: 20px; margin: 0 0 2px; font-weight: 600; }
h2 { font-size: 15px; margin: 0 0 8px; font-weight: 600; }
h3 { font-size: 12px; margin: 0; font-weight: 500; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
a { color: var(--accent); }
.muted, .detail { color: var(--muted); }
.detail { font-size: 12.5px; margin: 4px 0 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(250px, 1fr)); gap: 12px; margin: 16px 0; }
.card, .panel { background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
.card { padding: 12px 14px; border-top: 3px solid var(--line); }
.card.warn { border-top-color: #e0a526; }
.card.bad { border-top-color: #d4484d; }
.figure { font-size: 26px; font-weight: 600; margin: 4px 0 0; font-variant-numeric: tabular-nums; }
.panel { padding: 14px 16px; margin: 0 0 16px; overflow-x: auto; }
.columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 0 16px; }
progress { width: 100%; height: 14px; margin: 10px 0 6px; accent-color: var(--accent); }
.chart { width: 100%; height: 120px; display: block; margin-top: 12px; border-bottom: 1px solid var(--line); }
.chart .bar { fill: var(--accent); }
.chart .bar.empty { fill: #d3dae4; }
.ticks { display: flex; justify-content: space-between; font-size: 11.5px; color: var(--muted); margin-top: 4px; }
td time { white-space: nowrap; }
table { width: 100%; border-collapse: collapse; margin-top: 8px; }
th, td { text-align: left; padding: 7px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; font-weight: 500; color: var(--muted); }
tbody tr:last-child td { border-bottom: 0; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.mono, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; word-break: break-all; }
.error-text { color: var(--bad); }
td .error-text { font-size: 12.5px; margin-top: 2px; }
.tag { display: inline-block; padding: 0 6px; border-radius: 4px; background: #eef1f5; font-size: 12px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 500; background: #eef1f5; color: var(--muted); }
.badge.healthy, .badge.succeeded { background: var(--okbg); color: var(--ok); }
.badge.failing, .badge.running { background: var(--warnbg); color: var(--warn); }
.badge.paused, .badge.failed { background: var(--badbg); color: var(--bad); }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 6px 16px; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.token { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 10px 0 4px; }
.token[hidden] { display: none; }
.token input { font: inherit; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; min-width: 260px; }
button { font: inherit; font-size: 13px; padding: 4px 12px; border: 1px solid #c5ccd6; border-radius: 6px; background: #fff; color: var(--text); cursor: pointer; }
button:hover:not(:disabled) { background: #f0f3f7; }
button:disabled { color: var(--muted); cursor: default; }
.actions { white-space: nowrap; }
.result { display: block; font-size: 12.5px; margin-top: 4px; white-space: normal; max-width: 220px; }
.result.ok { color: var(--ok); }
.result.error { color: var(--bad); }
`;

// No framework: the replay buttons, the token field and the countdown. Written as plain ES2017 for any browser.
const SCRIPT = `
(function () {
  'use strict';
  var KEY = 'pozy-sync.admin-token';
  var REFRESH_MS = ${REFRESH_SECONDS * 1000};
  var form = document.getElementById('token-form');
  var input = document.getElementById('admin-token');
  var state = document.getElementById('token-state');
  var refresh = document.getElementById('refresh-state');
  var due = Date.now() + REFRESH_MS;
  var busy = 0;

  function postpone() { due = Date.now() + REFRESH_MS; }
  function token() { try { return sessionStorage.getItem(KEY) || ''; } catch (e) { return ''; } }
  function showToken() {
    if (state) state.textContent = token() ? 'token set for this tab' : 'no token: Replay needs the admin token';
  }

  if (form) {
    form.hidden = false;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var value = input.value.trim();
      try { if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY); } catch (e) { /* storage refused */ }
      input.value = '';
      postpone();
      showToken();
    });
    document.getElementById('forget-token').addEventListener('click', function () {
      try { sessionStorage.removeItem(KEY); } catch (e) { /* storage refused */ }
      showToken();
    });
    input.addEventListener('input', postpone);
    showToken();
  }

  Array.prototype.forEach.call(document.querySelectorAll('button[data-letter-id]'), function (button) {
    var result = button.parentNode.querySelector('[data-result]');
    function say(text, tone) { result.textContent = text; result.className = 'result ' + tone; }
    button.disabled = false;
    button.addEventListener('click', function () {
      postpone();
      var secret = token();
      if (!secret) { say('admin token needed: paste it above', 'error'); return; }
      button.disabled = true;
      busy += 1;
      say('replaying…', '');
      fetch('/admin/dead-letters/' + encodeURIComponent(button.getAttribute('data-letter-id')) + '/replay', {
        method: 'POST',
        headers: { authorization: 'Bearer ' + secret },
        credentials: 'omit',
        cache: 'no-store'
      }).then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (body) {
          if (response.ok && body && body.replayed) {
            say('replayed', 'ok');
            var badge = button.closest('tr').querySelector('.state .badge');
            if (badge) { badge.textContent = 'replayed'; badge.className = 'badge healthy'; }
          }
          else say((body && body.message) || ('HTTP ' + response.status), 'error');
        });
      }).catch(function (error) {
        say('no answer: ' + error.message, 'error');
      }).then(function () {
        button.disabled = false;
        busy -= 1;
        postpone();
      });
    });
  });

  // A resource's timeline (GET /admin/.../timeline), with the admin token, shown under the letters.
  Array.prototype.forEach.call(document.querySelectorAll('a[data-timeline]'), function (link) {
    link.addEventListener('click', function (event) {
      event.preventDefault();
      postpone();
      var view = document.getElementById('timeline-view');
      var secret = token();
      view.hidden = false;
      if (!secret) { view.textContent = 'admin token needed: paste it above'; return; }
      busy += 1;
      view.textContent = 'reading ' + link.textContent + '…';
      fetch(link.getAttribute('data-timeline'), { headers: { authorization: 'Bearer ' + secret }, credentials: 'omit', cache: 'no-store' })
        .then(function (response) { return response.json(); })
        .then(function (body) {
          if (!body || !body.entries) { view.textContent = (body && body.message) || 'no timeline'; return; }
          view.textContent = link.textContent + (body.nextCursor ? ' (first ' + body.entries.length + ' entries)' : '') + '\\n' + body.entries.map(function (e) {
            return e.at + '  ' + e.kind + '  ' + (e.type || e.outcome || e.state || '') + (e.statusCode ? ' ' + e.statusCode : '') + (e.detail ? '  ' + e.detail : '') + (e.traceId ? '  trace ' + e.traceId : '');
          }).join('\\n');
        })
        .catch(function (error) { view.textContent = 'no answer: ' + error.message; })
        .then(function () { busy -= 1; postpone(); });
    });
  });

  // Reload for fresh figures, but never while the operator is typing a token or a replay is in flight.
  setInterval(function () {
    if (busy > 0 || document.activeElement === input) postpone();
    var left = Math.max(0, Math.ceil((due - Date.now()) / 1000));
    if (refresh) refresh.textContent = ' (next in ' + left + ' s)';
    if (Date.now() >= due) location.reload();
  }, 1000);
})();
`;
