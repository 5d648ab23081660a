import { describe, expect, test } from 'claude-code/testing'
import { BAND_PROPS, ROOT, SOCKET, world } from './world'

describe('band', () => {
  test('shows the running jobs and redraws when they change', async ($, on) => {
    let band: unknown = { folder: ROOT, text: '⚙ 2 running · :3000 :8081 · /procs', failed: [] }
    const { clock, daemon } = world(on, { 'GET /api/claude/band': () => band })
    await $.session.start({ surface: 'terminal', isInteractive: true, cwd: ROOT })
    const ui = await $.ui.mount({ plugin: 'corral', surface: 'terminal', component: 'AbovePrompt', props: BAND_PROPS })
    expect((await ui.find({ type: 'Text' })).text).toBe('⚙ 2 running · :3000 :8081 · /procs')
    band = { folder: ROOT, text: '⚙ 1 running · :3000 · /procs', failed: [{ id: 'j1', label: '✖ web exited 1' }] }
    await clock.advance(2000)
    expect((await ui.find({ type: 'Text' })).text).toBe('⚙ 1 running · :3000 · /procs · ✖ web exited 1')
    expect(daemon.calls[0]?.path).toBe(`/api/claude/band?folder=${encodeURIComponent(ROOT)}`)
  })
})
