import { describe, expect, test } from 'claude-code/testing'
import { BAND_PROPS, ROOT, world } from './world'

const TWO = { folder: ROOT, text: '⚙ 2 running · :3000 :8081 · /procs', failed: [] }
const BAND = { plugin: 'corral', surface: 'terminal', component: 'AbovePrompt', props: BAND_PROPS } as const

describe('band', () => {
  test('shows the running jobs and redraws when they change', async ($, on) => {
    let band: unknown = TWO
    const { clock, daemon } = world(on, { 'GET /api/claude/band': () => band })
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const ui = await $.ui.mount(BAND)
    expect((await ui.find({ type: 'Text' })).text).toBe('⚙ 2 running · :3000 :8081 · /procs')
    band = { folder: ROOT, text: '⚙ 1 running · :3000 · /procs', failed: [{ id: 'j1', label: '✖ web exited 1' }] }
    await clock.advance(2000)
    expect((await ui.find({ type: 'Text' })).text).toBe('⚙ 1 running · :3000 · /procs · ✖ web exited 1')
    expect(daemon.calls[0]?.path).toBe(`/api/claude/band?folder=${encodeURIComponent(ROOT)}`)
  })

  test('asked again at once after a Bash call', async ($, on) => {
    let band: unknown = { folder: ROOT, text: null, failed: [] }
    world(on, {
      'GET /api/claude/band': () => band,
      'POST /api/claude/supervise': () => ({ action: 'none', why: 'nothing to supervise' }),
    })
    on('tool.check', () => ({ decision: 'allow' }))
    on('tool.call', () => {
      band = TWO // the call started a job
      return { result: { stdout: '', stderr: '', interrupted: false } }
    })
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const ui = await $.ui.mount(BAND)
    expect(await ui.findAll({ type: 'Text' })).toHaveLength(0)
    await $.tool.call({ tool: 'Bash', command: 'corral run -d -- npm run dev' })
    expect((await ui.find({ type: 'Text' })).text).toBe(TWO.text)
  })

  test('draws nothing when nothing runs', async ($, on) => {
    world(on, { 'GET /api/claude/band': () => ({ folder: ROOT, text: null, failed: [] }) })
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const ui = await $.ui.mount(BAND)
    expect(await ui.findAll({ type: 'Text' })).toHaveLength(0)
  })

  test('a failed job shows until the person has seen it in /procs', async ($, on) => {
    const failed = [{ id: 'j1', label: '✖ web exited 1' }]
    const { clock } = world(on, {
      'GET /api/claude/band': () => ({ folder: ROOT, text: null, failed }),
      'GET /api/claude/procs': () => ({ session_jobs: [], earlier_jobs: [], other_session_jobs: [], unsupervised: [], other_listeners: [] }),
    })
    on('ui.open', () => ({ value: { isPlaced: true } }))
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const ui = await $.ui.mount(BAND)
    expect((await ui.find({ type: 'Text' })).text).toBe('✖ web exited 1')
    await $.command.run({ command: 'procs', args: '', origin: { kind: 'composer' }, presentation: { layout: 'main', columns: 100 } as any } as any)
    await clock.advance(2000)
    expect(await ui.findAll({ type: 'Text' })).toHaveLength(0)
  })

  test('no band and no refresh under -p', async ($, on) => {
    const { clock, daemon } = world(on, { 'GET /api/claude/band': () => TWO })
    await $.session.start({ surface: null, isInteractive: false, cwd: ROOT })
    await clock.advance(10000)
    expect(daemon.calls.filter((c) => c.path.startsWith('/api/claude/band'))).toHaveLength(0)
  })
})
