"""A gf01.agent.v1 program that calls a tool before its actions (tests/test_tracks.py): argv[1] names the tool it
asks for (default: the first the start message offers, else local-planner-v1). With the oracle it asks for a
certificate, checks it with a second call and plays it; with the planner it simulates one edit and plays nothing."""

import json
import sys


def ask(tool, atoms):
    print(json.dumps({"type": "tool", "tool": tool, "atoms": atoms}), flush=True)
    reply = json.loads(sys.stdin.readline())
    assert reply["type"] == "tool_result" and reply["tool"] == tool, reply
    return reply["result"]


def main():
    plan = {}
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "start":
            offered = msg.get("tools") or []
            tool = sys.argv[1] if len(sys.argv) > 1 else (offered[0] if offered else "local-planner-v1")
            if tool == "oracle-exact-search-v1":
                cert = ask(tool, None)["certificate"] or []
                assert ask(tool, cert)["valid"] is True
                for t, a, v in cert:
                    plan.setdefault(t, {})[a] = v
            else:
                ask(tool, [[0, msg["goal"]["inputs"][0], 1]])
            print(json.dumps({"set": plan.get(0, {})}), flush=True)
        elif msg["type"] == "observation" and not msg.get("done"):
            print(json.dumps({"set": plan.get(msg["t"] + 1, {})}), flush=True)
        elif msg["type"] == "end":
            break


if __name__ == "__main__":  # a program, not a test module: pytest's doctest collection imports it
    main()
