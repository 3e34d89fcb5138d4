#!/usr/bin/env python3
"""A minimal gf01.agent.v1 agent (docs/agent-protocol.md), standard library only.

Run it with: gf01 play INSTANCE --agent-cmd "python3 examples/agent_example.py"
Policy: no edit, except at the target step t*, where it sets the first input to 1 and commits.
"""
import json
import sys


def action(goal, t):
    """The action for step t: one line of JSON."""
    if t == goal["t_star"]:
        return {"set": {goal["inputs"][0]: 1}, "commit": True, "t": t}
    return {"set": {}, "t": t}


goal = None
for line in sys.stdin:  # one message per line: start, observation..., end
    message = json.loads(line)
    if message["type"] == "start":
        goal, t = message["goal"], 0
    elif message["type"] == "observation":
        if message["done"]:  # the episode is over: no answer; the end message follows
            continue
        t = message["t"] + 1
    else:  # "end": the scored result; then the harness closes our input
        print(f"score_c={message['result']['score_c']}", file=sys.stderr)
        break
    print(json.dumps(action(goal, t)), flush=True)
