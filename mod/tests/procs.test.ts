import { describe, expect, test } from 'claude-code/testing'
import { ROOT, SESSION, world } from './world'

const job = (id: string, command: string, ports: number[] = []) => ({
  id: id.padEnd(32, '0'), name: null, command, ports, age_seconds: 125, state: 'running', exit_code: null,
})
const VIEW = {
  session_jobs: [job('aaaa1111', 'npm run dev', [3000]), job('bbbb2222', 'tsc -w')],
  earlier_jobs: [job('cccc3333', 'python3 -m http.server 8081', [8081])],
  other_session_jobs: [],
  unsupervised: [{ pid: 4242, started_at: 'b:99', ports: [5173], command: 'vite', name: 'node' }],
  other_listeners: [{ port: 5432, name: 'postgres', pid: null }],
}
const RUN = { origin: { kind: 'composer' }, presentation: { layout: 'main', columns: 100 } } as any
const PANE = { plugin: 'corral', surface: 'terminal', component: 'Pane', requestId: 'procs' } as any
const PANE_PROPS = { title: 'corral /procs', isFocused: true, bodyColumns: 100, placement: 'dock' } as any
const stopped = (id: string) => ({ outcomes: [{ id, targets: [{ result: 'terminated' }] }], ok: true, nothing: '' })

function daemonWith(on: any) {
  return world(on, {
    'GET /api/claude/band': () => ({ folder: ROOT, text: null, failed: [] }),
    'GET /api/claude/procs': () => VIEW,
    'POST /api/claude/procs': (call) => (call.body.action === 'clean' ? { forgotten: ['x'], outcomes: [] } : stopped(call.body.job || 'all')),
    'GET /api/jobs/aaaa1111000000000000000000000000/logs': () => ({ job: 'aaaa', lines: ['listening on :3000', 'GET / 200'] }),
  })
}

async function openPane($: any, on: any) {
  const opened: any[] = []
  on('ui.open', ($: any, e: any) => {
    opened.push(e)
    return { value: { isPlaced: true } }
  })
  await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
  const answer = await $.command.run({ command: 'procs', args: '', ...RUN })
  const ui = await $.ui.mount({ ...PANE, props: PANE_PROPS })
  return { answer, opened, ui }
}

describe('/procs', () => {
  test('opens a pane with its rows, with no text for the model', async ($, on) => {
    const { daemon } = daemonWith(on)
    const { answer, opened, ui } = await openPane($, on)
    expect(answer.text).toBeUndefined()
    expect(opened[0]).toMatchObject({ id: 'procs', focus: true, closeOnEscape: true })
    expect(daemon.calls.some((c) => c.path === `/api/claude/procs?folder=${encodeURIComponent(ROOT)}&session=${SESSION}`)).toBe(true)
    const texts = (await ui.findAll({ type: 'Text' })).map((t: any) => t.text)
    expect(texts).toContain('This session (2)')
    expect(texts).toContain('Earlier sessions here (1)')
    expect(texts).toContain('Not supervised (1)')
    expect(texts).toContain('  :5432 postgres')
    const buttons = (await ui.findAll({ type: 'Button' })).map((b: any) => [b.key, b.props.hotkey, b.text])
    expect(buttons).toContainEqual(['stop:aaaa1111000000000000000000000000', '1', 'stop'])
    expect(buttons).toContainEqual(['stop:pid-4242', '4', 'stop'])
    expect(buttons).toContainEqual(['stop-all', 's', "stop this session's"])
    expect(buttons).toContainEqual(['earlier', 'e', 'stop earlier'])
    expect(buttons).toContainEqual(['clean', 'c', 'clear finished'])
    expect(buttons).toContainEqual(['logs', 'l', 'logs'])
    expect((await ui.find({ type: 'Button', key: 'row:aaaa1111000000000000000000000000' })).text).toBe('aaaa1111  :3000  2m  npm run dev')
  })

  test('a row stop button stops that job, an unsupervised row by its identity', async ($, on) => {
    const { daemon } = daemonWith(on)
    const { ui } = await openPane($, on)
    await ui.press({ key: 'stop:aaaa1111000000000000000000000000' })
    await ui.press({ key: 'stop:pid-4242' })
    const posts = daemon.calls.filter((c) => c.method === 'POST').map((c) => c.body)
    expect(posts[0]).toMatchObject({ action: 'stop', job: 'aaaa1111000000000000000000000000', session: SESSION })
    expect(posts[1]).toMatchObject({ action: 'stop-pid', pid: 4242, started_at: 'b:99' })
    expect((await ui.find({ type: 'Text', text: /terminated/ })).text).toContain('terminated')
  })

  // The kit presses a Button by its key; its hotkey (s, e, c, l, a digit per row: checked
  // above) is the terminal's to map, pressed for real in tests/claude/test_mod_e2e.py.
  test('the action buttons: stop-all, earlier, clean, logs', async ($, on) => {
    const { daemon } = daemonWith(on)
    const { ui } = await openPane($, on)
    for (const key of ['stop-all', 'earlier', 'clean']) await ui.press({ key })
    const actions = daemon.calls.filter((c) => c.method === 'POST').map((c) => c.body.action)
    expect(actions).toEqual(['stop-all', 'earlier', 'clean'])
    await ui.press({ key: 'logs' })
    expect((await ui.find({ type: 'Text', text: /GET \/ 200/ })).text).toBe('  GET / 200')
  })

  test('arguments keep working without a pane: stop-all, stop ID, clean, earlier', async ($, on) => {
    const { daemon } = daemonWith(on)
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const run = (args: string) => $.command.run({ command: 'procs', args, ...RUN })
    expect((await run('stop aaaa1111')).text).toBe('aaaa1111 terminated')
    expect((await run('stop-all')).text).toBe('all terminated')
    expect((await run('clean')).text).toBe('forgot 1 finished job(s)')
    expect((await run('frobnicate')).text).toBe("expected one of: stop-all, stop ID, clean, earlier (got 'frobnicate')")
    const actions = daemon.calls.filter((c) => c.method === 'POST').map((c) => c.body.action)
    expect(actions).toEqual(['stop', 'stop-all', 'clean'])
  })

  test('fifty jobs: every row drawn with its stop button, hotkeys on the first nine', async ($, on) => {
    const many = Array.from({ length: 50 }, (_, i) => job(`j${String(i).padStart(7, '0')}`, `sleep ${i}`))
    world(on, {
      'GET /api/claude/band': () => ({ folder: ROOT, text: null, failed: [] }),
      'GET /api/claude/procs': () => ({ ...VIEW, session_jobs: many, earlier_jobs: [], unsupervised: [] }),
    })
    const { ui } = await openPane($, on)
    const stops = (await ui.findAll({ type: 'Button' })).filter((b: any) => String(b.key).startsWith('stop:'))
    expect(stops).toHaveLength(50)
    expect(stops.filter((b: any) => b.props.hotkey)).toHaveLength(9)
  })

  test('a failed job is marked in its row', async ($, on) => {
    world(on, {
      'GET /api/claude/band': () => ({ folder: ROOT, text: null, failed: [] }),
      'GET /api/claude/procs': () => ({ ...VIEW, session_jobs: [{ ...job('dddd4444', 'npm test'), state: 'exited', exit_code: 1 }] }),
    })
    const { ui } = await openPane($, on)
    expect((await ui.find({ type: 'Button', key: 'row:dddd4444000000000000000000000000' })).text).toBe('dddd4444  -  2m  npm test  (failed 1)')
  })

  test('where no pane can be placed, the list comes as text', async ($, on) => {
    daemonWith(on)
    on('ui.open', () => ({ value: { isPlaced: false } }))
    await $.session.start({ surface: null, isInteractive: false, cwd: ROOT })
    const { text } = await $.command.run({ command: 'procs', args: '', ...RUN })
    expect(text).toContain('This session:\n  aaaa1111  :3000  2m  npm run dev')
    expect(text).toContain('Not supervised:\n  pid 4242  :5173  vite')
  })
})
