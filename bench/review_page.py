"""The browser's review page of a change request with 50 page diffs: its server render time.

    python bench/review_page.py [--pages 50] [--runs 30]

Builds a fresh instance (git storage, SQLite search, tokens, web) in this process; writes --pages
pages of about 3 KB, then a token that may only propose proposes one edit per page (a line changed
in each: 50 word-level diffs). Times, through the whole Flask app (test client: routing, the
signed-in reviewer, the service, the diffs, the templates):

- ``GET /_/review/<id>`` (inline diffs) and ``?view=split`` (side by side);
- the same page when every page drifted and had to be rebased;
- baselines: ``review_change_request`` (the service's part: plans every operation on the current
  pages) and ``read_change_request`` (what MCP's read answers, its unified diffs).

Prints p50/p95 with the machine's load; never asserts timings.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from timing import percentiles, timed

from hostcore import SYSTEM, Principal, create_app, hookimpl
from hostcore.testing import sign_in_client

REVIEWER = Principal("reviewer", frozenset({"review"}))
BOT = Principal("bot", frozenset({"propose"}), client="bench-assistant 1.0")
CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "web"], "STORAGE": "git", "SEARCH": "sqlite"}


class People:
    @hookimpl
    def find_person(self, name, host):
        return REVIEWER if name == "reviewer" else None


def body(i: int) -> str:
    paragraphs = [f"## Part {p}\n\nThe status of item {i}.{p} is being tracked here, with notes on what changed and why it matters.\n"
                  for p in range(30)]  # fmt: skip
    return f"# Page {i}\n\n" + "\n".join(paragraphs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        app = create_app(CONFIG, instance_path=Path(tmp) / "instance", plugins=[People()])
        host = app.extensions["hostcore"]
        admin = host.wiki(SYSTEM)
        admin.save_namespace("notes", title="Notes")
        slugs = [f"notes/p{i:03d}" for i in range(args.pages)]
        made = admin.apply_changes([{"op": "save", "slug": s, "body": body(i)} for i, s in enumerate(slugs)])
        edits = [{"op": "edit", "slug": s, "basehash": c["hash"], "edits": [{"oldText": f"item {i}.7 is being", "newText": f"item {i}.7 was"}]}
                 for i, (s, c) in enumerate(zip(slugs, made["changes"], strict=True))]  # fmt: skip
        cr = host.wiki(BOT).create_change_request(edits, "Update 50 pages", "the bench asked")["id"]
        client = app.test_client()
        sign_in_client(client, "reviewer")
        reviewer = host.wiki(REVIEWER)

        def page(path: str) -> None:
            response = client.get(path)
            assert response.status_code == 200 and response.text.count('class="review-change"') == args.pages

        cases = {
            "GET /_/review/<id> (inline)": lambda: page(f"/_/review/{cr}"),
            "GET /_/review/<id>?view=split": lambda: page(f"/_/review/{cr}?view=split"),
            "review_change_request (service)": lambda: reviewer.review_change_request(cr),
            "read_change_request (MCP's read)": lambda: reviewer.read_change_request(cr),
        }
        times = {name: timed(fn, args.runs) for name, fn in cases.items()}
        admin.apply_changes([{"op": "edit", "slug": s, "basehash": admin.page(s).hash, "edits": [{"oldText": "Part 25", "newText": "Part 25b"}]}
                             for s in slugs])  # fmt: skip
        assert all(c["outcome"] == "rebased" for c in reviewer.review_change_request(cr)["changes"])
        times["GET /_/review/<id>, every page rebased"] = timed(lambda: page(f"/_/review/{cr}"), args.runs)
        host.close()
    load_after = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
          "(shared with other work: figures move with it)")  # fmt: skip
    print(f"the review page of a change request of {args.pages} page edits (pages of about 3 KB), {args.runs} runs, git storage:")
    for name, samples in times.items():
        print(f"  {name:42s} {percentiles(samples)}")


if __name__ == "__main__":
    main()
