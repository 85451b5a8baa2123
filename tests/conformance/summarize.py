"""Summarise one conformance run directory written by run.sh (stdlib only).

    python3 summarize.py RESULTS_DIR EXIT_CODE [REQUIREMENTS_YAML]

Reads every checks.json the suite wrote (one directory per scenario) and its run.log, and prints
one line per scenario, the failing checks with their messages, the suite's baseline verdict and a
closing "N passed, N failed" line counting required scenarios.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

DIR_RE = re.compile(r"^server-(?P<name>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BASELINE_HEADINGS = ("Expected failures (in baseline)", "Stale baseline", "Unexpected failures", "Baseline check")


def required_servers(path: Path) -> set[str] | None:
    """The ``server:`` list of a conformance requirements/<revision>.yaml (a flat list of names)."""
    if not path.is_file():
        return None
    names, inside = set(), False
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            inside = line.rstrip() == "server:"
        elif inside and line.strip().startswith("- "):
            names.add(line.strip()[2:].strip())
    return names


def main() -> int:
    out, rc = Path(sys.argv[1]), int(sys.argv[2])
    required = required_servers(Path(sys.argv[3])) if len(sys.argv) > 3 else None
    log = ANSI.sub("", (out / "run.log").read_text(errors="replace")) if (out / "run.log").exists() else ""
    not_scored: dict[str, str] = {}
    in_block = False
    for line in log.splitlines():
        if line.startswith("Not scored for"):
            in_block = True
            continue
        m = re.match(r"^\s+[✓✗] (\S+) \((.+)\)$", line)
        if in_block and m:
            not_scored[m.group(1)] = m.group(2)
        elif in_block and line.strip():
            in_block = False

    results = []
    for checks_file in sorted(out.glob("*/checks.json")):
        m = DIR_RE.match(checks_file.parent.name)
        name = m.group("name") if m else checks_file.parent.name
        try:
            checks = json.loads(checks_file.read_text())
        except ValueError:
            checks = [{"id": name, "status": "FAILURE", "errorMessage": "unreadable checks.json"}]
        results.append((name, checks))
    if required is not None:
        not_scored = {name: not_scored.get(name, "") for name, _ in results if name not in required}
    if not results:
        print(log[-4000:])
        print(f"run.sh: no results in {out} (conformance exit {rc})")
        return 0

    req_pass = req_fail = 0
    print(f"{'scenario':55} {'ok':>4} {'fail':>4} {'warn':>4}")
    for name, checks in results:
        count = {s: sum(c.get("status") == s for c in checks) for s in ("SUCCESS", "FAILURE", "WARNING")}
        tag = f"  [not scored{(': ' + not_scored[name]) if not_scored.get(name) else ''}]" if name in not_scored else ""
        mark = "✗" if count["FAILURE"] else "✓"
        print(f"{mark} {name:53} {count['SUCCESS']:4} {count['FAILURE']:4} {count['WARNING']:4}{tag}")
        if name not in not_scored:
            req_fail += bool(count["FAILURE"])
            req_pass += not count["FAILURE"]
    failing = [(n, c) for n, cs in results if n not in not_scored for c in cs if c.get("status") == "FAILURE"]
    if failing:
        print("\nFailing checks of required scenarios:")
        for name, check in failing:
            msg = (check.get("errorMessage") or check.get("description") or "").replace("\n", " ")
            print(f"  {name}:{check.get('id')}: {msg[:300]}")
    lines = log.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith(BASELINE_HEADINGS)), None)
    if start is not None:
        print("\n" + "\n".join(ln for ln in lines[start:] if ln.strip()))
    print(f"\nResults: {out}  (conformance exit {rc})")
    print(f"required scenarios: {req_pass} passed, {req_fail} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
