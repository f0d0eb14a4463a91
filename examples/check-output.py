#!/usr/bin/env python3
"""Checks a tool's stdout against the tool container contract (v1).

Reads the output (stdin or a file) and prints one line per stdout line: MSG <kind> or LOG.
Fails (exit 1) when a line that starts like a message ({"mcp"...) is not a single-line JSON object
of a known kind with the fields that kind needs, or when messages follow a result or error.
Options: --expect KIND[,KIND...]  the kinds of the messages, in order, with repeats collapsed
(e.g. status,input,result); --terminal result|error|none  what must end the output.
Used by examples/prove.sh; needs nothing but python3.
"""
import argparse
import json
import re
import sys

KINDS = {"status", "input", "result", "error"}


def check_message(obj):
    kind = obj.get("mcp")
    if kind not in KINDS:
        return f"unknown kind {kind!r}"
    if kind == "status" and not isinstance(obj.get("message"), str):
        return "status needs a string message"
    if kind == "input":
        reqs = obj.get("requests")
        if not isinstance(reqs, dict) or not reqs:
            return "input needs a non-empty requests object"
        for key, req in reqs.items():
            if not isinstance(req, dict) or req.get("method") != "elicitation/create":
                return f"input request {key!r} is not an elicitation/create request"
            params = req.get("params") or {}
            schema = params.get("requestedSchema") or {}
            if not isinstance(params.get("message"), str) or schema.get("type") != "object" \
                    or not isinstance(schema.get("properties"), dict):
                return f"input request {key!r} is not a form elicitation"
    if kind == "result":
        res = obj.get("result")
        if not isinstance(res, dict) or not isinstance(res.get("content"), list) or not res["content"]:
            return "result needs a CallToolResult with a non-empty content array"
        for block in res["content"]:
            if block.get("type") != "text" or not isinstance(block.get("text"), str):
                return "content blocks must be text blocks"
        if "isError" in res and not isinstance(res["isError"], bool):
            return "isError must be a boolean"
    if kind == "error":
        err = obj.get("error")
        if not isinstance(err, dict) or not isinstance(err.get("code"), int) \
                or not isinstance(err.get("message"), str):
            return "error needs {code: integer, message: string}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?")
    ap.add_argument("--expect")
    ap.add_argument("--terminal", choices=["result", "error", "none"])
    args = ap.parse_args()
    text = open(args.file).read() if args.file else sys.stdin.read()
    kinds, problems, terminal = [], [], None
    for n, line in enumerate(text.splitlines(), 1):
        if not re.match(r'^\s*\{\s*"mcp"', line):
            print(f"{n:4} LOG    {line[:100]}")
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            problems.append(f"line {n}: not valid JSON: {e}")
            continue
        why = check_message(obj) if isinstance(obj, dict) else "not a JSON object"
        if why:
            problems.append(f"line {n}: {why}")
            continue
        kind = obj["mcp"]
        if terminal and kind != "status":
            problems.append(f"line {n}: {kind} message after the {terminal} message")
        if kind in ("result", "error") and not terminal:
            terminal = kind
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
        print(f"{n:4} MSG    {kind:6} {line[:100]}")
    if args.expect and kinds != args.expect.split(","):
        problems.append(f"message kinds {','.join(kinds)}, expected {args.expect}")
    if args.terminal and (terminal or "none") != args.terminal:
        problems.append(f"ended with {terminal or 'no result or error'}, expected {args.terminal}")
    for p in problems:
        print("FAIL  " + p)
    print("OK" if not problems else "NOT OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
