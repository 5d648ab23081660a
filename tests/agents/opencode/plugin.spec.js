// The thin opencode plugin (plain JavaScript: Claude Code's plugin validator type-checks
// every .ts file in the repository, which is also corral's Claude Code plugin), run by opencode's own runtime (`BUN_BE_BUN=1 opencode test`):
// it asks the hook program and follows its answer, and fails open on anything else.
// tests/agents/test_opencode_plugin.py renders the plugin with a fake hook and runs this.
import { expect, test } from "bun:test"
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"

const { CorralPlugin } = await import(process.env.CORRAL_PLUGIN)
const LOG = process.env.FAKE_HOOK_LOG

function logged() {
  return readFileSync(LOG, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
}

async function call(tool, args) {
  writeFileSync(LOG, "")
  const hooks = await CorralPlugin({ directory: "/project", worktree: "/" })
  const input = { tool, sessionID: "ses_1", callID: "call_1" }
  const output = { args: { ...args } }
  let thrown = null
  try {
    await hooks["tool.execute.before"](input, output)
  } catch (error) {
    thrown = error
  }
  const requests = readFileSync(LOG, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
  // What the model reads back: the tool's output, after the plugin's tool.execute.after.
  const result = { title: "t", metadata: {}, output: "served\n" }
  if (thrown === null) await hooks["tool.execute.after"]({ ...input, args: output.args }, result)
  return { args: output.args, thrown, requests, output: result.output }
}

test("sends the call as one JSON object and keeps a line corral passes", async () => {
  const args = { command: "ls -la", description: "list", workdir: "/project/web" }
  const got = await call("bash", args)
  expect(got.thrown).toBeNull()
  expect(got.args).toEqual(args)
  expect(got.output).toBe("served\n")
  expect(got.requests).toEqual([
    { tool: "bash", sessionID: "ses_1", callID: "call_1", args, directory: "/project", worktree: "/" },
  ])
})

test("a rewrite replaces the command, keeps every other argument, tells the model", async () => {
  const got = await call("bash", { command: "npm run dev REWRITE &", description: "d", timeout: 5 })
  expect(got.thrown).toBeNull()
  expect(got.args).toEqual({ command: "supervised npm run dev REWRITE &", description: "d", timeout: 5 })
  expect(got.output).toBe("served\n\n\ncorral supervises it")
})

test("a refusal throws with the reason the model reads", async () => {
  const got = await call("bash", { command: "npm run dev DENY" })
  expect(got.thrown).toBeInstanceOf(Error)
  expect(got.thrown.message).toBe("corral refused: a copy already runs")
  expect(got.args).toEqual({ command: "npm run dev DENY" })
})

for (const word of ["GARBAGE", "CRASH", "NULL"]) {
  test(`an answer it cannot use (${word}) leaves the call untouched`, async () => {
    const got = await call("bash", { command: `npm run dev ${word}` })
    expect(got.thrown).toBeNull()
    expect(got.args).toEqual({ command: `npm run dev ${word}` })
    expect(got.output).toBe("served\n")
    expect(got.requests.length).toBe(1)
  })
}

test("other tools are never sent to corral", async () => {
  const got = await call("read", { filePath: "/etc/hosts" })
  expect(got.thrown).toBeNull()
  expect(got.requests).toEqual([])
})

test("a hook program that cannot start leaves the call untouched", async () => {
  const { CorralPlugin: Missing } = await import(process.env.CORRAL_PLUGIN_MISSING)
  const hooks = await Missing({ directory: "/project", worktree: "/" })
  const output = { args: { command: "npm run dev REWRITE" } }
  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "s", callID: "c" }, output)
  expect(output.args).toEqual({ command: "npm run dev REWRITE" })
})

test("every command opencode runs carries the session as CORRAL_SESSION", async () => {
  const hooks = await CorralPlugin({ directory: "/project", worktree: "/" })
  const output = { env: { KEEP: "1" } }
  await hooks["shell.env"]({ cwd: "/project", sessionID: "ses_1", callID: "c" }, output)
  expect(output.env).toEqual({ KEEP: "1", CORRAL_SESSION: "ses_1" })
  const none = { env: {} }
  await hooks["shell.env"]({ cwd: "/project" }, none)
  expect(none.env).toEqual({})
})

// The session briefing, in the system prompt opencode builds for each request to the model.
function folder(name) {
  const path = join(dirname(LOG), name)
  mkdirSync(path, { recursive: true })
  return path
}

async function transform(hooks, sessionID, system = ["opencode's own prompt"]) {
  const output = { system: [...system] }
  await hooks["experimental.chat.system.transform"]({ sessionID, model: { id: "m" } }, output)
  return output.system
}

test("the briefing joins the system prompt, asked once while corral's ledger is unchanged", async () => {
  const watch = folder("BRIEF-1")
  writeFileSync(LOG, "")
  const hooks = await CorralPlugin({ directory: watch, worktree: "/" })
  const briefed = ["opencode's own prompt", "corral: job 1 runs, http://localhost:5173"]
  expect(await transform(hooks, "ses_1")).toEqual(briefed)
  expect(await transform(hooks, "ses_1")).toEqual(briefed)
  expect(logged()).toEqual([{ briefing: { sessionID: "ses_1", directory: watch, worktree: "/" } }])
  await Promise.all([transform(hooks, "ses_2"), transform(hooks, "ses_2")]) // asked once
  expect(logged().length).toBe(2)
  utimesSync(watch, new Date(), new Date(Date.now() + 5000)) // a job started or ended
  expect(await transform(hooks, "ses_1")).toEqual(briefed)
  expect(logged().length).toBe(3)
  expect(await transform(hooks, "ses_1")).toEqual(briefed)
  expect(logged().length).toBe(3)
})

test("no briefing: the prompt stays as it is, and corral is asked again once its ledger changed", async () => {
  const watch = folder("QUIET-1")
  writeFileSync(LOG, "")
  const hooks = await CorralPlugin({ directory: watch, worktree: "/" })
  expect(await transform(hooks, "ses_1")).toEqual(["opencode's own prompt"])
  expect(await transform(hooks, "ses_1")).toEqual(["opencode's own prompt"])
  expect(logged().length).toBe(1)
  utimesSync(watch, new Date(), new Date(Date.now() + 5000))
  await transform(hooks, "ses_1")
  expect(logged().length).toBe(2)
})

test("without a session (opencode generating an agent) corral is not asked", async () => {
  writeFileSync(LOG, "")
  const hooks = await CorralPlugin({ directory: folder("BRIEF-2"), worktree: "/" })
  const output = { system: ["p"] }
  await hooks["experimental.chat.system.transform"]({ model: { id: "m" } }, output)
  expect(output.system).toEqual(["p"])
  expect(logged()).toEqual([])
})

test("once opencode compacted the session, the briefing is asked again with its own jobs", async () => {
  const watch = folder("BRIEF-4")
  writeFileSync(LOG, "")
  const hooks = await CorralPlugin({ directory: watch, worktree: "/" })
  await transform(hooks, "ses_1")
  await hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, { context: [] })
  await transform(hooks, "ses_1")
  await transform(hooks, "ses_1")
  const request = { sessionID: "ses_1", directory: watch, worktree: "/" }
  expect(logged()).toEqual([{ briefing: request }, { briefing: { ...request, source: "compact" } }])
})

for (const word of ["GARBAGE", "CRASH", "NULL"]) {
  test(`a briefing it cannot use (${word}): no briefing, never asked again in the session`, async () => {
    writeFileSync(LOG, "")
    const hooks = await CorralPlugin({ directory: folder(`${word}-b`), worktree: "/" })
    expect(await transform(hooks, "ses_1")).toEqual(["opencode's own prompt"])
    expect(await transform(hooks, "ses_1")).toEqual(["opencode's own prompt"])
    expect(logged().length).toBe(1)
  })
}

test("a hook program that cannot start gives no briefing and breaks nothing", async () => {
  const { CorralPlugin: Missing } = await import(process.env.CORRAL_PLUGIN_MISSING)
  const hooks = await Missing({ directory: folder("BRIEF-3"), worktree: "/" })
  expect(await transform(hooks, "ses_1")).toEqual(["opencode's own prompt"])
})
