"""What namespace settings cost to read when they are as large as save_namespace allows.

    python bench/namespace_settings.py [--namespaces 8] [--runs 30]

Builds an instance on git storage with --namespaces namespaces whose settings are at their limits
(1,000 tree paths of 255 characters, a 64 KiB template, every text field full: about 300 KB of
YAML each) and one namespace whose settings file was committed from outside with 100,000 tree
entries (889 KB, over the 512 KiB cap). Then prints p50/p95 of ``list_namespaces``,
``read_namespace`` (one large namespace) and ``health`` through the service layer, beside, in the
same run, what reading those files cost before: the pure-Python YAML parse of every file, which
list_namespaces and health each did once per namespace. Prints figures only.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import yaml
from timing import percentiles, timed  # bench/timing.py beside this script

from hostcore import Change, Put
from hostcore.app import build_host
from hostcore.domain import namespaces as ns_settings
from hostcore.domain.pages import namespace_path
from hostcore.domain.principal import SYSTEM


def full_settings(n: int) -> dict:
    folder = f"area-{n}-".ljust(100, "s") + "/" + "r" * 95 + "/"
    return {
        "title": f"Namespace {n} " + "t" * 240,
        "description": "d" * 255,
        "public": n % 2 == 0,
        "index": "home",
        "widgets": list(ns_settings.WIDGETS),
        "tree": [(folder + f"{i:05d}-").ljust(254 - len(f"ns{n}"), "p") for i in range(ns_settings.MAX_TREE)],
        "new": {"template": ("## Heading\n\nSome template text.\n" * 2200)[: ns_settings.MAX_TEMPLATE_BYTES], "slug": "journal/new"},
        "export": {"base_url": "https://example.org/", "sitemap": True},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--namespaces", type=int, default=8)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostcore-bench-") as tmp:
        instance = Path(tmp) / "instance"
        instance.mkdir()
        (instance / "hostcore.toml").write_text('PLUGINS = ["git"]\nSTORAGE = "git"\n[PLUGIN_CONFIG.git]\nfsync = false\n')
        host = build_host(instance)
        wiki = host.wiki(SYSTEM)
        for n in range(args.namespaces):
            wiki.save_namespace(f"ns{n}", **full_settings(n))
            wiki.save_page(f"ns{n}/home", body=f"Home of ns{n}: [[ns{n}/other]]")
            wiki.save_page(f"ns{n}/other", body="A page.")
        huge = yaml.safe_dump({"title": "Outside", "tree": [f"page-{i}" for i in range(100_000)]}).encode()
        host.storage.apply([Put(namespace_path("outside"), huge)], Change("outsider", "a huge settings file"))
        files = [host.storage.read(namespace_path(f"ns{n}")) for n in range(args.namespaces)]
        print(f"{args.namespaces} namespaces with settings at their limits ({max(map(len, files)) // 1024} KB each), "
              f"one committed from outside ({len(huge) // 1024} KB, skipped)")  # fmt: skip
        print(f"  list_namespaces                        {percentiles(timed(wiki.list_namespaces, args.runs))}")
        print(f"  read_namespace (one large namespace)   {percentiles(timed(lambda: wiki.read_namespace('ns0'), args.runs))}")
        print(f"  health                                 {percentiles(timed(wiki.health, args.runs))}")
        before = max(2, args.runs // 10)
        print(f"  baseline: pure-Python parse of every file (once per call before)  "
              f"{percentiles(timed(lambda: [yaml.safe_load(data) for data in [*files, huge]], before))}")  # fmt: skip
        print(f"  baseline: pure-Python parse of one large file (read_namespace before)  "
              f"{percentiles(timed(lambda: yaml.safe_load(files[0]), before))}")  # fmt: skip
        host.close()


if __name__ == "__main__":
    main()
