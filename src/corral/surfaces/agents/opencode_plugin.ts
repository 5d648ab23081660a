// corral's opencode plugin: `corral install opencode` writes it, `--uninstall` removes it.
//
// It reads no shell line itself. Before each `bash` tool call it hands the call to corral's
// hook program (the command below, written at install time) as one JSON object on stdin:
//   {"tool", "sessionID", "callID", "args", "directory", "worktree"}
// and follows the answer on stdout:
//   {"command": "...", "context": "..."}  run this line instead (the job runs under
//                       corral's supervisor); the context is added to the call's output,
//                       so the model reads what corral started
//   {"deny": "..."}     refuse the call; the model reads the reason
//   nothing             run the line as written
// Every command opencode runs also gets CORRAL_SESSION (opencode's own carry no session id),
// so what it starts outside corral is still attributed to its session by `corral ls`.
//
// Whatever goes wrong on the way (no corral, a crash, a slow answer, an answer it cannot
// read) leaves the call exactly as the model wrote it: corral never blocks the agent
// because of its own error.

const HOOK: string[] = __CORRAL_HOOK__
const TIMEOUT_MS = 30_000

type Answer = { command?: unknown; deny?: unknown; context?: unknown }

async function ask(request: unknown): Promise<Answer | null> {
  try {
    const { spawn } = await import("node:child_process")
    return await new Promise<Answer | null>((resolve) => {
      const child = spawn(HOOK[0], HOOK.slice(1), { stdio: ["pipe", "pipe", "ignore"] })
      let out = ""
      const timer = setTimeout(() => {
        child.kill("SIGKILL")
        resolve(null)
      }, TIMEOUT_MS)
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

export const CorralPlugin = async (ctx: { directory?: string; worktree?: string }) => {
  const told = new Map<string, string>() // callID -> what corral started, for the model
  return {
    "tool.execute.before": async (
      input: { tool: string; sessionID?: string; callID?: string },
      output: { args: Record<string, unknown> },
    ) => {
      if (input.tool !== "bash" || typeof output?.args?.command !== "string") return
      const answer = await ask({
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
    "tool.execute.after": async (input: { callID?: string }, output: { output?: unknown }) => {
      const context = input.callID === undefined ? undefined : told.get(input.callID)
      if (context === undefined) return
      told.delete(input.callID as string)
      if (typeof output?.output === "string") output.output = `${output.output}\n\n${context}`
    },
  }
}
