"""A stand-in for corral's hook program in the plugin's own test (plugin.spec.js): it records
the event and request it got and answers by a word in the command (tool-before) or the
folder (briefing), so each test picks an answer."""

import json
import os
import sys

event = sys.argv[1]
request = json.loads(sys.stdin.read())
with open(os.environ["FAKE_HOOK_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(request if event == "tool-before" else {event: request}) + "\n")
word = request["args"]["command"] if event == "tool-before" else request["directory"]
if "DENY" in word:
    print(json.dumps({"deny": "corral refused: a copy already runs"}))
elif "REWRITE" in word:
    print(json.dumps({"command": "supervised " + word, "context": "corral supervises it"}))
elif "BRIEF" in word:
    print(json.dumps({"context": "corral: job 1 runs, http://localhost:5173", "watch": word}))
elif "QUIET" in word:
    print(json.dumps({"watch": word}))
elif "GARBAGE" in word:
    print("this is not JSON")
elif "CRASH" in word:
    print(json.dumps({"command": "never used", "context": "never used"}))
    sys.exit(1)
elif "NULL" in word:
    print("null")
