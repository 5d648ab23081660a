// corral's opencode plugin: `corral install opencode` writes it, `--uninstall` removes it.
//
// It reads no shell line itself. It hands each event to corral's hook program (the command
// below, written at install time, followed by the event's name) as one JSON object on stdin,
// and follows the answer on stdout:
// - tool-before, before each `bash` tool call:
//     {"tool", "sessionID", "callID", "args", "directory", "worktree"}
//   {"command": "...", "context": "..."}  run this line instead (the job runs under
//                       corral's supervisor); the context is added to the call's output,
//                       so the model reads what corral started
//   {"deny": "..."}     refuse the call; the model reads the reason
//   nothing             run the line as written
// - briefing, when opencode builds a session's system prompt:
//     {"sessionID", "directory", "worktree"}, and "source": "compact" once the session was
//     compacted (the model may have lost track of its own jobs: corral tells them too)
//   {"context": "...", "watch": "..."}  the session briefing (the jobs running in the
//                       project, with their URLs) goes into the system prompt; it is asked
//                       once per session and again only when the `watch` folder (corral's
//                       ledger) changed, as a briefing takes corral a scan of the machine
// Every command opencode runs also gets CORRAL_SESSION (opencode's own carry no session id),
// so what it starts outside corral is still attributed to its session by `corral ls`.
//
// Whatever goes wrong on the way (no corral, a crash, a slow answer, an answer it cannot
// read) leaves the call exactly as the model wrote it, and the system prompt without a
// briefing: corral never blocks the agent because of its own error.

const HOOK: string[] = __CORRAL_HOOK__
const TIMEOUT_MS = 30_000
const BRIEFING_TIMEOUT_MS = 10_000 // the model's request waits for it

type Answer = { command?: unknown; deny?: unknown; context?: unknown; watch?: unknown }

async function ask(event: string, request: unknown, timeout = TIMEOUT_MS): Promise<Answer | null> {
  try {
    const { spawn } = await import("node:child_process")
    return await new Promise<Answer | null>((resolve) => {
      const child = spawn(HOOK[0], [...HOOK.slice(1), event], { stdio: ["pipe", "pipe", "ignore"] })
      let out = ""
      const timer = setTimeout(() => {
        child.kill("SIGKILL")
        resolve(null)
      }, timeout)
      child.stdout.setEncoding("utf8")
      child.stdout.on("data", (chunk: string) => (out += chunk))
      child.on("error", () => {
        clearTimeout(timer)
        resolve(null)
      })
      child.on("close", (code: number | null) => {
        clearTimeout(timer)
        if (code !== 0 || !out.trim()) return resolve(null)
        try {
          const parsed = JSON.parse(out)
          resolve(parsed !== null && typeof parsed === "object" ? parsed : null)
        } catch {
          resolve(null)
        }
      })
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(request))
    })
  } catch {
    return null
  }
}

async function stamp(folder: unknown): Promise<number | null> {
  if (typeof folder !== "string") return null
  try {
    const { stat } = await import("node:fs/promises")
    return (await stat(folder)).mtimeMs
  } catch {
    return null
  }
}

type Briefing = { stamp: number | null; watch: unknown; text: Promise<string | null> }

export const CorralPlugin = async (ctx: { directory?: string; worktree?: string }) => {
  const told = new Map<string, string>() // callID -> what corral started, for the model
  const briefings = new Map<string, Briefing>() // sessionID -> its briefing, as last asked
  const compacted = new Set<string>() // sessions opencode compacted

  async function briefing(sessionID: string): Promise<string | null> {
    const known = briefings.get(sessionID)
    if (known !== undefined && (known.watch === undefined || (await stamp(known.watch)) === known.stamp))
      return known.text
    const before = known === undefined ? null : await stamp(known.watch)
    const asked = ask(
      "briefing",
      {
        sessionID,
        directory: ctx?.directory,
        worktree: ctx?.worktree,
        ...(compacted.has(sessionID) ? { source: "compact" } : {}),
      },
      BRIEFING_TIMEOUT_MS,
    )
    const entry: Briefing = {
      stamp: before,
      watch: known?.watch,
      text: asked.then((a) => (a !== null && typeof a.context === "string" ? a.context : null)),
    }
    briefings.set(sessionID, entry)
    const answer = await asked
    // No answer: corral failed, this session goes without a briefing (never asked again).
    entry.watch = answer !== null && typeof answer.watch === "string" ? answer.watch : undefined
    // The folder is known only from the first answer: its first stamp is taken after it (a
    // job that changes during that first ask is told from the ledger's next change on).
    if (known === undefined) entry.stamp = await stamp(entry.watch)
    return entry.text
  }

  return {
    "tool.execute.before": async (
      input: { tool: string; sessionID?: string; callID?: string },
      output: { args: Record<string, unknown> },
    ) => {
      if (input.tool !== "bash" || typeof output?.args?.command !== "string") return
      const answer = await ask("tool-before", {
        tool: input.tool,
        sessionID: input.sessionID,
        callID: input.callID,
        args: output.args,
        directory: ctx?.directory,
        worktree: ctx?.worktree,
      })
      if (answer === null) return
      if (typeof answer.deny === "string") throw new Error(answer.deny)
      if (typeof answer.command !== "string") return
      output.args.command = answer.command
      if (typeof answer.context === "string" && input.callID) told.set(input.callID, answer.context)
    },
    "shell.env": async (input: { sessionID?: string }, output: { env: Record<string, string> }) => {
      if (typeof input?.sessionID === "string" && output?.env) output.env.CORRAL_SESSION = input.sessionID
    },
    "experimental.chat.system.transform": async (
      input: { sessionID?: string },
      output: { system: string[] },
    ) => {
      if (typeof input?.sessionID !== "string" || !Array.isArray(output?.system)) return
      try {
        const text = await briefing(input.sessionID)
        if (text) output.system.push(text)
      } catch {
        // no briefing
      }
    },
    "experimental.session.compacting": async (input: { sessionID?: string }) => {
      if (typeof input?.sessionID !== "string") return
      compacted.add(input.sessionID)
      briefings.delete(input.sessionID) // asked again, with the session's own jobs
    },
    "tool.execute.after": async (input: { callID?: string }, output: { output?: unknown }) => {
      const context = input.callID === undefined ? undefined : told.get(input.callID)
      if (context === undefined) return
      told.delete(input.callID as string)
      if (typeof output?.output === "string") output.output = `${output.output}\n\n${context}`
    },
  }
}
