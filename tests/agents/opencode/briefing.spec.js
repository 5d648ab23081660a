// The opencode plugin's session briefing with corral's real hook program, under opencode's
// own runtime: tests/agents/opencode/test_opencode_plugin.py starts a job and runs this.
import { expect, test } from "bun:test"
import { spawnSync } from "node:child_process"

const { CorralPlugin } = await import(process.env.CORRAL_PLUGIN)
const { PROJECT, PORT, JOB } = process.env
const STOP = JSON.parse(process.env.CORRAL_STOP)

async function transform(hooks) {
  const output = { system: ["opencode's own prompt"] }
  await hooks["experimental.chat.system.transform"]({ sessionID: "ses_new", model: {} }, output)
  return output.system
}

test("the system prompt names the running job and its URL, until the job is stopped", async () => {
  const hooks = await CorralPlugin({ directory: PROJECT, worktree: PROJECT })
  const [own, briefing, ...more] = await transform(hooks)
  expect(own).toBe("opencode's own prompt")
  expect(more).toEqual([])
  expect(briefing).toContain("corral: 1 job(s) started earlier are still running in this project")
  expect(briefing).toContain(`- job ${JOB}: \`python3 -m http.server ${PORT} --bind 127.0.0.1\``)
  expect(briefing).toContain(`http://localhost:${PORT}`)
  expect(await transform(hooks)).toEqual([own, briefing])
  const stopped = spawnSync(STOP[0], STOP.slice(1), { encoding: "utf8" })
  expect(stopped.status).toBe(0)
  expect(await transform(hooks)).toEqual([own]) // the ledger changed: asked again
})
