import { describe, expect, test } from 'claude-code/testing'
import { BAND_PROPS, ROOT, SESSION, world } from './world'

const RUN = { origin: { kind: 'composer' }, presentation: { layout: 'main', columns: 100 } } as any

describe('session events', () => {
  test('session.start finds the daemon through the plugin and registers /procs', async ($, on) => {
    const { daemon } = world(on)
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    expect(daemon.registered[0]).toMatchObject({ name: 'procs', immediate: true })
    expect(JSON.stringify(daemon.runs[0])).toContain('/bin/corral-daemon')
  })

  test('after a compaction or a /clear the session is told again, in the context', async ($, on) => {
    const { daemon } = world(on, { 'GET /api/claude/briefing': () => ({ text: 'corral: 1 job(s) this session started are still running' }) })
    on('prompt.context', () => ({ blocks: [{ name: 'currentDate', text: 'today' }] }))
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    expect(daemon.env).toEqual({ CORRAL_MOD: '1' }) // the hooks leave these to the mod
    // the first conversation: the SessionStart hook told it
    expect((await $.prompt.context({ blocks: [] })).blocks).toEqual([{ name: 'currentDate', text: 'today' }])
    const { blocks } = await $.prompt.context({ blocks: [] }) // after a compaction
    expect(blocks).toEqual([
      { name: 'currentDate', text: 'today' },
      { name: 'corral', text: 'corral: 1 job(s) this session started are still running' },
    ])
    await $.session.end({ reason: 'clear', sessionId: SESSION, resume: {} as any })
    await $.prompt.context({ blocks: [] }) // the conversation after /clear
    const asked = daemon.calls.filter((c) => c.path.startsWith('/api/claude/briefing')).map((c) => c.path)
    const base = `/api/claude/briefing?folder=${encodeURIComponent(ROOT)}&session=${SESSION}`
    expect(asked).toEqual([`${base}&source=compact`, `${base}&source=clear`])
  })

  test('nothing to tell: the context is left as it is', async ($, on) => {
    world(on, { 'GET /api/claude/briefing': () => ({ text: null }) })
    on('prompt.context', () => ({ blocks: [] }))
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    await $.prompt.context({ blocks: [] })
    expect((await $.prompt.context({ blocks: [] })).blocks).toEqual([])
  })

  test('without the daemon the session is not marked: the hooks do it all', async ($, on) => {
    const { daemon } = world(on)
    daemon.up = false
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    expect(daemon.env).toEqual({})
  })

  test('session.end hands the session to the daemon', async ($, on) => {
    const { daemon } = world(on, { 'POST /api/claude/session-end': () => ({ session: SESSION, policy: 'terminate' }) })
    await $.session.start({ surface: null, isInteractive: false, cwd: ROOT })
    await $.session.end({ reason: 'other', sessionId: SESSION, resume: {} as any })
    expect(daemon.calls.map((c) => [c.method, c.path, c.body])).toContainEqual(['POST', '/api/claude/session-end', { session: SESSION }])
  })

  test('session.end gives up after 1 s of its 1.5 s budget when the daemon hangs', async ($, on) => {
    const { clock, daemon } = world(on)
    daemon.hangs = true
    await $.session.start({ surface: null, isInteractive: false, cwd: ROOT })
    let done = false
    const ending = $.session.end({ reason: 'other', sessionId: SESSION, resume: {} as any }).then(() => (done = true))
    await clock.advance(999)
    expect(done).toBe(false)
    await clock.advance(1)
    await ending
    expect(done).toBe(true)
  })
})

// The Bash tool beneath the mod, every call allowed: what it ran.
function bashTool(on: any): string[] {
  const ran: string[] = []
  on('tool.call', ($: any, e: any) => {
    ran.push(e.command)
    return { result: { stdout: '', stderr: '', interrupted: false } }
  })
  on('tool.check', () => ({ decision: 'allow' }))
  return ran
}

describe('the daemon is down', () => {
  test('no band, /procs says why, and a Bash call runs as written', async ($, on) => {
    const { daemon, clock } = world(on)
    daemon.up = false
    const ran = bashTool(on)
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const ui = await $.ui.mount({ plugin: 'corral', surface: 'terminal', component: 'AbovePrompt', props: BAND_PROPS })
    await clock.advance(4000)
    expect(await ui.findAll({ type: 'Text' })).toHaveLength(0)
    const { text } = await $.command.run({ command: 'procs', args: '', ...RUN })
    expect(text).toContain('corral is not installed or its daemon did not start')
    await $.tool.call({ tool: 'Bash', command: 'npm run dev', run_in_background: true })
    expect(ran).toEqual(['npm run dev'])
    await $.session.end({ reason: 'other', sessionId: SESSION, resume: {} as any })
  })

  test('a daemon that stops answering mid-session: the band empties, calls run as written', async ($, on) => {
    const { daemon, clock } = world(on, {
      'GET /api/claude/band': () => ({ folder: ROOT, text: '⚙ 1 running · /procs', failed: [] }),
      'POST /api/claude/supervise': () => ({ action: 'wrap', rewritten: 'W', context: 'C' }),
    })
    const ran = bashTool(on)
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const ui = await $.ui.mount({ plugin: 'corral', surface: 'terminal', component: 'AbovePrompt', props: BAND_PROPS })
    expect(await ui.findAll({ type: 'Text' })).toHaveLength(1)
    daemon.up = false
    await clock.advance(2000)
    expect(await ui.findAll({ type: 'Text' })).toHaveLength(0)
    await $.tool.call({ tool: 'Bash', command: 'npm run dev', run_in_background: true })
    expect(ran).toEqual(['npm run dev'])
  })
})
