// corral's Claude Code mod: the band above the prompt, the `/procs` pane, what a session is
// told about running jobs, the session-end policy and, where nothing else supervises, the
// supervision of a Bash call with the permission decision of the ORIGINAL line.
//
// It computes nothing itself: every fact comes from corral's daemon over its Unix socket
// (src/corral/surfaces/http_claude.py). The daemon is started (or found) once per session by
// `bin/corral-daemon`. An unreachable daemon or any error leaves Claude Code as it is: no
// band, `/procs` says why, every tool call runs as written.

const HOST = 'http://corral'
const BAND_EVERY_MS = 2000
const SESSION_END_MS = 1000 // session.end hooks share 1.5 s
const ROW_KEYS = ['1', '2', '3', '4', '5', '6', '7', '8', '9']

type Job = {
  id: string
  name: string | null
  command: string
  ports: number[]
  age_seconds: number
  state: string
  exit_code: number | null
}
type Loose = { pid: number; started_at: string; ports: number[]; command: string; name: string }
type Overview = {
  session_jobs: Job[]
  earlier_jobs: Job[]
  other_session_jobs: Job[]
  unsupervised: Loose[]
  other_listeners: { port: number; name: string | null; pid: number | null }[]
}
type Failure = { id: string; label: string }
type Row = { key: string; label: string; job?: string; pid?: number; started_at?: string }

// One session per process: what the band and the pane show, kept between draws.
const state = {
  socket: null as string | null,
  band: null as string | null,
  failed: [] as Failure[],
  seen: new Set<string>(),
  view: null as Overview | null,
  selected: null as string | null,
  message: null as string | null,
  logs: [] as string[],
  rewritten: new Map<string, string>(), // the wrapped line -> the model's own line
  asked: new Map<string, string>(), // the wrapped line -> why an ask rule asks about the original
  ticking: false,
  contexts: 0, // prompt.context asked in this process: once per conversation, again after a compaction
  cleared: false, // the last conversation ended with /clear
}

// -- the daemon --------------------------------------------------------------------------------

async function ask($: any, method: string, path: string, body?: unknown): Promise<any> {
  if (!state.socket) return null
  const init: any = { method, socketPath: state.socket, headers: { 'content-type': 'application/json' } }
  if (body !== undefined) init.body = JSON.stringify(body)
  const answer = await $.http.fetch(HOST + path, init)
  const envelope = JSON.parse(answer.text)
  if (!answer.ok) throw new Error((envelope.errors || [])[0] || `corral answered ${answer.status}`)
  return envelope.data
}

async function connect($: any): Promise<void> {
  const run = await $.process.run([`${$.plugin.root}/bin/corral-daemon`], { timeoutMs: 8000 })
  const found = /, socket (\/.*?)\s*$/.exec(run.stdout || '') // the path may hold spaces
  state.socket = (run.exitCode === 0 && found && found[1]) || null
}

function query(params: Record<string, string | null>): string {
  const parts: string[] = []
  for (const [name, value] of Object.entries(params)) {
    if (value) parts.push(`${name}=${encodeURIComponent(value)}`)
  }
  return parts.join('&')
}

// -- the band ----------------------------------------------------------------------------------

export function bandText(): string | null {
  const unseen = state.failed.filter((f) => !state.seen.has(f.id)).map((f) => f.label)
  const parts = [state.band, ...unseen].filter((p) => p)
  return parts.length ? parts.join(' · ') : null
}

async function refreshBand($: any): Promise<void> {
  const before = bandText()
  try {
    const got = await ask($, 'GET', `/api/claude/band?${query({ folder: await $.session.root() })}`)
    state.band = got ? got.text : null
    state.failed = got ? got.failed : []
  } catch {
    state.band = null
    state.failed = []
  }
  if (bandText() !== before) $.ui.invalidate('ui.render')
}

async function drawBand($: any, e: any, next: any): Promise<any> {
  const text = bandText()
  if (!text) return next(e)
  const { Box, Text } = $.ui.resolve(e)
  return h(Box, {}, h(Text, { wrap: 'truncate' }, text))
}

// -- /procs ------------------------------------------------------------------------------------

function age(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)}s`
  if (seconds < 3600) return `${Math.round(seconds / 60)}m`
  return `${Math.round(seconds / 3600)}h`
}

function jobLabel(j: Job): string {
  const ports = j.ports.map((p) => `:${p}`).join(' ') || '-'
  const name = j.name ? ` ${j.name}` : ''
  // a job that ended on its own with an error stays listed until cleared, as in `corral ls`
  const how = j.state === 'exited' && j.exit_code ? `failed ${j.exit_code}` : j.state
  const state = j.state === 'running' ? '' : `  (${how})`
  return `${j.id.slice(0, 8)}${name}  ${ports}  ${age(j.age_seconds)}  ${j.command}${state}`
}

function looseLabel(p: Loose): string {
  const ports = p.ports.map((port) => `:${port}`).join(' ') || '-'
  return `pid ${p.pid}  ${ports}  ${p.command || p.name}`
}

export function groups(view: Overview): [string, Row[]][] {
  const jobs = (list: Job[]): Row[] =>
    list.map((j) => ({ key: j.id, label: jobLabel(j), job: j.id }))
  return [
    ['This session', jobs(view.session_jobs)],
    ['Earlier sessions here', jobs(view.earlier_jobs)],
    ['Other jobs here', jobs(view.other_session_jobs)],
    [
      'Not supervised',
      view.unsupervised.map((p) => ({
        key: `pid-${p.pid}`,
        label: looseLabel(p),
        pid: p.pid,
        started_at: p.started_at,
      })),
    ],
  ]
}

export function procsText(view: Overview): string {
  const out: string[] = []
  for (const [title, rows] of groups(view)) {
    if (!rows.length && title !== 'This session') continue
    out.push(`${title}:`)
    out.push(...(rows.length ? rows.map((r) => `  ${r.label}`) : ['  none']))
  }
  if (view.other_listeners.length) {
    out.push('Other listeners (read-only):')
    for (const l of view.other_listeners) out.push(`  :${l.port} ${l.name || '?'}`)
  }
  out.push('/procs stop-all | stop ID | clean | earlier')
  return out.join('\n')
}

function outcomeText(done: any): string {
  if (!done) return 'corral is not running'
  if (done.forgotten) return `forgot ${done.forgotten.length} finished job(s)`
  if (!done.outcomes.length) return done.nothing || 'nothing to stop'
  return done.outcomes
    .map((o: any) => `${String(o.id).slice(0, 8)} ${o.targets.map((t: any) => t.result).join(', ')}`)
    .join('\n')
}

async function loadProcs($: any): Promise<void> {
  const params = query({ folder: await $.session.root(), session: await $.session.id() })
  state.view = await ask($, 'GET', `/api/claude/procs?${params}`)
  for (const f of state.failed) state.seen.add(f.id) // the person has seen them now
}

async function act($: any, body: Record<string, unknown>): Promise<string> {
  const full = { ...body, session: await $.session.id(), folder: await $.session.root() }
  let text: string
  try {
    text = outcomeText(await ask($, 'POST', '/api/claude/procs', full))
  } catch (err) {
    text = `corral: ${(err as Error).message}`
  }
  await loadProcs($).catch(() => undefined)
  await refreshBand($)
  return text
}

async function showLogs($: any, job: string): Promise<void> {
  try {
    const got = await ask($, 'GET', `/api/jobs/${encodeURIComponent(job)}/logs?lines=8`)
    state.logs = got ? got.lines : []
    state.message = `last lines of ${job.slice(0, 8)}${state.logs.length ? '' : ': none'}`
  } catch (err) {
    state.logs = []
    state.message = `corral: ${(err as Error).message}`
  }
}

async function press($: any, action: string, row?: Row): Promise<void> {
  if (action === 'stop' && row) {
    const body = row.job ? { action: 'stop', job: row.job } : { action: 'stop-pid', pid: row.pid, started_at: row.started_at }
    state.message = await act($, body)
  } else if (action === 'select' && row) {
    state.selected = row.key
    if (row.job) await showLogs($, row.job)
  } else if (action === 'logs') {
    const rows = state.view ? groups(state.view).flatMap(([, r]) => r) : []
    const chosen = rows.find((r) => r.key === state.selected) || rows.find((r) => r.job)
    if (chosen && chosen.job) await showLogs($, chosen.job)
    else state.message = 'no job to show the log of'
  } else {
    state.message = await act($, { action })
  }
  $.ui.invalidate('ui.render')
}

async function drawPane($: any, e: any, next: any): Promise<any> {
  const { Box, Text, Button } = $.ui.resolve(e)
  const view = state.view
  if (!view) return h(Box, {}, h(Text, {}, state.message || 'corral is not running'))
  const lines: any[] = []
  let n = 0
  for (const [title, rows] of groups(view)) {
    if (!rows.length && title !== 'This session') continue
    lines.push(h(Text, { bold: true }, `${title} (${rows.length})`))
    if (!rows.length) lines.push(h(Text, { dimColor: true }, '  none'))
    for (const row of rows) {
      const hotkey = ROW_KEYS[n++] // the first nine rows; Tab and Enter reach every row
      const stop: Record<string, unknown> = { key: `stop:${row.key}`, onPress: () => press($, 'stop', row) }
      if (hotkey) stop.hotkey = hotkey
      lines.push(
        h(
          Box,
          { flexDirection: 'row', gap: 1 },
          h(Button, stop, 'stop'),
          h(
            Button,
            { key: `row:${row.key}`, plain: true, dimColor: state.selected !== row.key, onPress: () => press($, 'select', row) },
            row.label,
          ),
        ),
      )
    }
  }
  if (view.other_listeners.length) {
    lines.push(h(Text, { bold: true }, 'Other listeners (read-only)'))
    for (const l of view.other_listeners) lines.push(h(Text, { dimColor: true }, `  :${l.port} ${l.name || '?'}`))
  }
  lines.push(
    h(
      Box,
      { flexDirection: 'row', gap: 1 },
      h(Button, { key: 'stop-all', hotkey: 's', onPress: () => press($, 'stop-all') }, "stop this session's"),
      h(Button, { key: 'earlier', hotkey: 'e', onPress: () => press($, 'earlier') }, 'stop earlier'),
      h(Button, { key: 'clean', hotkey: 'c', onPress: () => press($, 'clean') }, 'clear finished'),
      h(Button, { key: 'logs', hotkey: 'l', onPress: () => press($, 'logs') }, 'logs'),
    ),
  )
  if (state.message) lines.push(h(Text, {}, state.message))
  for (const line of state.logs) lines.push(h(Text, { dimColor: true, wrap: 'truncate' }, `  ${line}`))
  return h(Box, { flexDirection: 'column' }, ...lines)
}

async function runProcs($: any, e: any, next: any): Promise<any> {
  const words = (e.args || '').trim().split(/\s+/).filter((w: string) => w)
  if (!state.socket) return { text: 'corral is not installed or its daemon did not start: /procs needs `corral` on PATH.' }
  if (words.length) {
    const [action, job] = words
    if (!['stop-all', 'stop', 'clean', 'earlier'].includes(action) || (action === 'stop') !== (words.length === 2) || words.length > 2)
      return { text: `expected one of: stop-all, stop ID, clean, earlier (got '${words.join(' ')}')` }
    return { text: await act($, action === 'stop' ? { action, job } : { action }) }
  }
  try {
    await loadProcs($)
  } catch (err) {
    return { text: `corral: ${(err as Error).message}` }
  }
  state.message = null
  state.logs = []
  const rows = groups(state.view as Overview).reduce((n, [, r]) => n + r.length, 0)
  const placed = await $.ui.open({ id: 'procs', title: 'corral /procs', focus: true, closeOnEscape: true, rows: Math.min(24, rows + 8) })
  $.ui.invalidate('ui.render')
  await refreshBand($)
  return placed && placed.isPlaced ? {} : { text: procsText(state.view as Overview) }
}

// -- supervision -------------------------------------------------------------------------------

function bashInput(e: any, command: string): Record<string, unknown> {
  const input: Record<string, unknown> = { command }
  for (const name of ['description', 'timeout', 'run_in_background']) {
    if (e[name] !== undefined) input[name] = e[name]
  }
  return input
}

// Every Bash call: supervised or left alone, then the band asked again at once (a job may
// have started or ended).
async function supervise($: any, e: any, next: any): Promise<any> {
  try {
    return await superviseCall($, e, next)
  } finally {
    if (state.ticking) await refreshBand($)
  }
}

// The call will not start the job it reserved (refused, or failed): a later start of the same
// server is judged on its own, not refused as "being started".
async function withdraw($: any, tokens: string[]): Promise<void> {
  await ask($, 'POST', '/api/claude/withdraw', { tokens }).catch(() => null)
}

async function superviseCall($: any, e: any, next: any): Promise<any> {
  const line = e.command
  if (!state.socket || typeof line !== 'string') return next(e)
  let answer: any
  try {
    answer = await ask($, 'POST', '/api/claude/supervise', {
      command: line,
      cwd: await $.session.cwd(),
      background: e.run_in_background === true,
      prefix: (await $.env.get('CLAUDE_CODE_SHELL_PREFIX')) || '',
    })
  } catch {
    return next(e) // fail open: the line runs as written
  }
  if (answer && answer.action === 'refuse') return { deny: answer.reason }
  if (!answer || answer.action !== 'wrap') return next(e)
  // Rewritten only where the decision about the original can follow it exactly: a line
  // allowed (by a rule or the mode), or one an ask rule puts to a person. A denied line runs
  // as written so that Claude Code refuses it as it would; so does a line only the mode would
  // ask about: auto mode's classifier must judge the model's own line, and a mod can ask it
  // about no other (2.1.332: `$.tool.judge` is not given to mods, a tool.judge input is
  // pinned). In manual mode the plugin's settings hook still supervises that line.
  const verdict = await $.tool.check({ tool: 'Bash', input: bashInput(e, line) })
  if (verdict.decision === 'deny' || (verdict.decision === 'ask' && !verdict.rule)) {
    await withdraw($, answer.tokens)
    return next(e)
  }
  state.rewritten.set(answer.rewritten, line)
  try {
    const result = await next({ ...e, command: answer.rewritten })
    if (!result || result.deny || result.isError) {
      await withdraw($, answer.tokens)
      return result
    }
    return { ...result, context: [...((result && result.context) || []), answer.context] }
  } finally {
    state.rewritten.delete(answer.rewritten)
    state.asked.delete(answer.rewritten)
  }
}

// The decision Claude Code gives the model's own line: its rules and mode judge the original,
// and a classic hook's stricter word about the wrapped line still counts.
async function check($: any, e: any, next: any): Promise<any> {
  const original = e.input && state.rewritten.get(e.input.command)
  if (original === undefined) return next(e)
  const mine = await $.tool.check({ tool: e.tool, input: { ...e.input, command: original } })
  const beneath = await next(e)
  if (beneath.hook && strictness(beneath.decision) > strictness(mine.decision)) return beneath
  if (mine.decision === 'ask') state.asked.set(e.input.command, mine.reason || `${mine.rule} asks`)
  return mine
}

function strictness(decision: string): number {
  return decision === 'deny' ? 2 : decision === 'ask' ? 1 : 0
}

// Auto mode asks its classifier about a call still in question: for a wrapped line, that is
// an ask rule's (see `check`), which wants a person, never the classifier (a refusal where
// nobody can be asked), as it would for the original.
async function judge($: any, e: any, next: any): Promise<any> {
  const asked = e.input && state.asked.get(e.input.command)
  if (asked === undefined) return next(e)
  return { decision: 'ask', reason: asked }
}

// -- session -----------------------------------------------------------------------------------

async function start($: any, e: any, next: any): Promise<any> {
  try {
    await connect($)
  } catch {
    state.socket = null
  }
  if (state.socket) await $.env.set('CORRAL_MOD', '1') // the hooks leave the mod its part
  $.command.register({
    name: 'procs',
    description: "corral: this session's dev servers and background jobs, with ports and stop buttons",
    argumentHint: '[stop-all | stop ID | clean | earlier]',
    immediate: true,
  })
  if (state.socket && e.isInteractive) {
    await refreshBand($)
    if (!state.ticking) {
      state.ticking = true
      $.clock.every(BAND_EVERY_MS, () => refreshBand($))
    }
  }
  return next(e)
}

// What a session is told about running jobs. At startup and on a resume the SessionStart
// hook tells it (it runs before the mod could mark the session); the mod tells it again when
// the conversation is read anew in the same process: after a compaction (with its own jobs,
// which the model has lost track of) or a /clear. CORRAL_MOD, set at session.start, makes the
// hooks leave those to the mod (src/corral/surfaces/claude/events.py).
async function context($: any, e: any, next: any): Promise<any> {
  const beneath = await next(e)
  if (state.contexts++ === 0 || !state.socket) return beneath
  const source = state.cleared ? 'clear' : 'compact'
  state.cleared = false
  let text: string | null = null
  try {
    const params = query({ folder: await $.session.cwd(), session: await $.session.id(), source })
    const got = await ask($, 'GET', `/api/claude/briefing?${params}`)
    text = got ? got.text : null
  } catch {
    return beneath
  }
  if (!text) return beneath
  return { ...beneath, blocks: [...beneath.blocks.filter((b: any) => b.name !== 'corral'), { name: 'corral', text }] }
}

async function end($: any, e: any, next: any): Promise<any> {
  state.cleared = e.reason === 'clear'
  if (state.socket) {
    const told = ask($, 'POST', '/api/claude/session-end', { session: e.sessionId }).catch(() => null)
    await Promise.race([told, $.clock.sleep(SESSION_END_MS)])
  }
  return next(e)
}

function passOn($: any, e: any, next: any): any {
  return next(e)
}

export function register(on: any): void {
  on('session.start', start)
  on('session.end', end)
  on('prompt.context', context)
  on('ui.render', { component: 'AbovePrompt' }, drawBand)
  on('ui.render', { component: 'Pane' }, drawPane)
  on('command.run', { command: 'procs' }, runProcs)
  // Any failure of corral's leaves the call as Claude Code would handle it without corral.
  on('tool.call', { tool: 'Bash' }, supervise).catch(passOn)
  on('tool.check', { tool: 'Bash' }, check).catch(passOn)
  on('tool.judge', { tool: 'Bash' }, judge).catch(passOn)
}
