"""A stand-in for corral's hook program in the plugin's own test (plugin.spec.js): it records
the request it got and answers by a word in the command, so each test picks an answer."""

import json
import os
import sys

request = json.loads(sys.stdin.read())
with open(os.environ["FAKE_HOOK_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(request) + "\n")
command = request["args"]["command"]
if "DENY" in command:
    print(json.dumps({"deny": "corral refused: a copy already runs"}))
elif "REWRITE" in command:
    print(json.dumps({"command": "supervised " + command, "context": "corral supervises it"}))
elif "GARBAGE" in command:
    print("this is not JSON")
elif "CRASH" in command:
    print(json.dumps({"command": "never used"}))
    sys.exit(1)
elif "NULL" in command:
    print("null")
