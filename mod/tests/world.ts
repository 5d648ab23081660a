// The world beneath corral's mod in its tests: Claude Code's session, and corral's daemon as
// the routes of src/corral/surfaces/http_claude.py answer (the Python tests pin those).
import { mock } from 'claude-code/testing'

export const SOCKET = '/run/my corral/corral.sock' // a space in it, as a home may have
export const ROOT = '/work/app'
export const SESSION = 'sess-1'

export type Call = { method: string; path: string; body: any }

export type Daemon = {
  up: boolean
  hangs: boolean // answers nothing for a minute
  env: Record<string, string> // what the mod set with $.env.set
  calls: Call[]
  registered: any[] // what $.command.register was given
  runs: any[] // what $.process.run was given
  answers: Record<string, (call: Call) => unknown>
}

function envelope(data: unknown, status = 200, errors: string[] = []) {
  const text = JSON.stringify({ schema: 1, data, errors })
  return { value: { status, ok: status < 300, headers: {}, text } }
}

export function world(on: any, answers: Record<string, (call: Call) => unknown> = {}, env: Record<string, string> = {}) {
  const daemon: Daemon = { up: true, hangs: false, env: {}, calls: [], registered: [], runs: [], answers }
  const clock = mock.clock(on)
  mock.env(on, env)
  on('session.start', ($: any, e: any) => ({ cwd: e.cwd }))
  on('session.end', ($: any, e: any) => ({ sessionId: e.sessionId }))
  on('session.root', () => ({ value: ROOT }))
  on('session.cwd', () => ({ value: ROOT }))
  on('session.id', () => ({ value: SESSION }))
  on('env.set', ($: any, e: any) => {
    daemon.env[e.name] = e.value
    return { value: {} }
  })
  on('command.register', ($: any, e: any) => {
    daemon.registered.push(e)
    return { value: undefined }
  })
  on('process.run', ($: any, e: any) => {
    daemon.runs.push(e)
    return { value: daemon.up
      ? { exitCode: 0, stdout: `corral daemon: running, pid 7, socket ${SOCKET}\n`, stderr: '' }
      : { exitCode: 1, stdout: '', stderr: 'corral daemon: could not start' } }
  })
  on('http.fetch', async ($: any, e: any) => {
    if (daemon.hangs) await clock.sleep(60000)
    if (!daemon.up || e.init?.socketPath !== SOCKET) throw new Error('connect ECONNREFUSED')
    const url = new URL(e.url)
    const call = { method: e.init?.method || 'GET', path: url.pathname + url.search, body: e.init?.body ? JSON.parse(e.init.body) : undefined }
    daemon.calls.push(call)
    const answer = daemon.answers[`${call.method} ${url.pathname}`]
    if (!answer) return envelope(null, 404, [`no route ${url.pathname}`])
    return envelope(answer(call))
  })
  return { daemon, clock }
}

export const BAND_PROPS = { hasSurvey: false, isCollapsed: false, isWorking: false, maxRows: 4, bodyColumns: 100 } as any
