import { describe, expect, test } from 'claude-code/testing'
import { ROOT, world } from './world'

const LINE = 'npm run dev'
const WRAPPED = "'/py' -I -S '/corral/launcher' --ledger /l -- 'npm run dev'"
const CONTEXT = 'corral supervises `npm run dev` as job 1234abcd'

// The engine beneath the mod: the test's tool.check plays the user's rules for the ORIGINAL
// line (`rules`) and answers `ask` for any other (no rule names corral's wrapper); the test's
// tool.call plays the Bash tool, recording what it ran.
function engine(on: any, rules: Record<string, string>, answer: unknown = { action: 'wrap', rewritten: WRAPPED, context: CONTEXT, tokens: ['1234abcd'] }) {
  const { daemon } = world(on, {
    'POST /api/claude/supervise': () => answer,
    'POST /api/claude/withdraw': (call) => ({ withdrawn: call.body.tokens }),
    'GET /api/claude/band': () => ({ folder: ROOT, text: null, failed: [] }),
  }, { CLAUDE_CODE_SHELL_PREFIX: '' })
  const ran: string[] = []
  const checked: string[] = []
  on('tool.check', ($: any, e: any) => {
    checked.push(e.input.command)
    const decision = rules[e.input.command] || 'ask'
    return { decision, ...(rules[e.input.command] ? { rule: `Bash(${e.input.command})` } : {}) }
  })
  on('tool.call', ($: any, e: any) => {
    ran.push(e.command)
    return { result: { stdout: 'ok', stderr: '', interrupted: false } }
  })
  return { daemon, ran, checked }
}

async function call($: any, command = LINE) {
  await $.session.start({ surface: null, isInteractive: false, cwd: ROOT })
  return $.tool.call({ tool: 'Bash', command, run_in_background: true, description: 'dev server' })
}

describe('supervision (tool.call and tool.check)', () => {
  test('an allowed line runs wrapped, with the allow of the original and the model told', async ($, on) => {
    const { daemon, ran } = engine(on, { [LINE]: 'allow' })
    const result = await call($)
    expect(ran).toEqual([WRAPPED])
    expect(result.context).toContain(CONTEXT)
    expect(daemon.calls.some((c) => c.path === '/api/claude/withdraw')).toBe(false)
    expect(daemon.calls.find((c) => c.path === '/api/claude/supervise')?.body).toEqual({ command: LINE, cwd: ROOT, background: true, prefix: '' })
  })

  test('a line the rules deny is not rewritten: Claude Code denies the original', async ($, on) => {
    const { daemon, ran } = engine(on, { [LINE]: 'deny' })
    const result = await call($)
    expect(ran).toEqual([])
    expect(daemon.calls.find((c) => c.path === '/api/claude/withdraw')?.body).toEqual({ tokens: ['1234abcd'] })
    expect(result.isError).toBe(true)
    expect(result.text).toContain('Permission to use Bash has been denied')
    expect(result.context).toBeUndefined()
  })

  test('an ask rule on the original stays an ask for the wrapped line (refused with nobody to ask)', async ($, on) => {
    const { daemon, ran, checked } = engine(on, { [LINE]: 'ask' })
    const result = await call($)
    expect(ran).toEqual([])
    expect(result.isError).toBe(true)
    expect(result.text).toContain('Permission to use Bash has been denied')
    expect(result.context).toBeUndefined()
    expect(checked).toContain(LINE)
    // its reservation is withdrawn: a later start is judged on its own
    expect(daemon.calls.find((c) => c.path === '/api/claude/withdraw')?.body).toEqual({ tokens: ['1234abcd'] })
  })

  test('a refusal from corral (a duplicate) is the call error, nothing runs', async ($, on) => {
    const { ran } = engine(on, { [LINE]: 'allow' }, { action: 'refuse', reason: 'corral refused: already running as job 1234abcd' })
    const result = await call($)
    expect(ran).toEqual([])
    expect(result.deny).toBe('corral refused: already running as job 1234abcd')
  })

  test('left alone when corral says so (its shell prefix supervises, or nothing to supervise)', async ($, on) => {
    const { daemon, ran } = engine(on, { [LINE]: 'allow', ls: 'allow' }, { action: 'none', why: "corral's shell prefix supervises at execution" })
    await call($)
    await $.tool.call({ tool: 'Bash', command: 'ls' })
    expect(ran).toEqual([LINE, 'ls'])
    expect(daemon.runs).toHaveLength(1) // session.start's: a call left alone spawns no process
  })

  test('a line only the mode would ask about runs as written (the classifier or the dialog judges it)', async ($, on) => {
    const { daemon, ran, checked } = engine(on, {}) // no rule: the mode asks
    await call($)
    expect(ran).toEqual([]) // nobody to ask here: refused, as the original would be
    expect(checked).not.toContain(WRAPPED) // the check was about the original only
    expect(daemon.calls.find((c) => c.path === '/api/claude/withdraw')?.body).toEqual({ tokens: ['1234abcd'] })
  })

  test('a check of another tool call is not touched', async ($, on) => {
    engine(on, { [LINE]: 'allow' })
    await $.session.start({ surface: null, isInteractive: false, cwd: ROOT })
    expect((await $.tool.check({ tool: 'Bash', input: { command: WRAPPED } })).decision).toBe('ask')
  })
})
