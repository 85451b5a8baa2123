"""The blocks assistants see (read_section) are the blocks this plugin's renderer draws: every
top-level block of markdown-it's parse of a page, the very parser the web uses, is one heading or
one numbered block, with the same lines, for a corpus of tricky cases and generated pages."""

from __future__ import annotations

import random

import pytest
from hostcore_web import render

TRICKY = [
    "# A\ntext\n## B\n- a\n- b\n\n  cont\n- c\nlazy\n\npara\n",
    "```\n# not a heading\n```\n# heading",
    "- a\n---\n",
    "- a\n===\n",
    "> q\nlazy\n# h\n",
    "para\n| a | b |\n|---|---|\n| 1 | 2 |\nnext\n\nx",
    "- a | b\n  |---|---|\n- c",
    "    code\n\n    more\ntext",
    "1. a\n2. b\n- c\n",
    "- a\n\n\n- b\n",
    "- a\n 2. b\n",
    "- ```\n# x\n```",
    "text\n2. a\n",
    "~~~\n```\n~~~\nafter\n",
    "#\n## \n#x\n## C#\n### closed ###\n",
    "Title\n=====\ntext",
    "-\n\n-\n\n\n-\n",
    "   - three\n    # four",
    "> > deep\n    - mixed",
    "* -\n===\n",
    "line\r\n- item\r\n\r\n# crlf\r\n",
    "```unclosed\n\n# inside\n\n",
]


def text_of(lines: list[str], first: int, end: int) -> str:
    while end - 1 > first and not lines[end - 1].strip(" \t\r"):
        end -= 1
    return "\n".join(lines[first:end]).removesuffix("\r")  # a CRLF line's block ends before its CR


def rendered_blocks(body: str) -> list[str]:
    lines = body.split("\n")
    env = {"slug": "notes/x", "existing": set(), "href": render.page_href, "file_href": render.file_href}
    return [text_of(lines, *t.map) for t in render._MD.parse(body, env) if t.level == 0 and t.nesting >= 0 and t.map]


def assistant_blocks(wiki, slug: str, body: str) -> list[str]:
    existing = wiki.list_pages("notes")["pages"]
    basehash = wiki.read_page(slug)["hash"] if any(p["slug"] == slug for p in existing) else None
    wiki.save_page(slug, basehash, body=body)
    out = []
    for s in wiki.outline(slug, 0, 5000)["sections"]:
        read = wiki.read_section(slug, s["section_id"], 0, 1_000_000)
        out += ([read["heading"].rstrip("\r")] if s["level"] else []) + [b["text"] for b in read["blocks"]]
    return out


@pytest.mark.parametrize("body", TRICKY)
def test_tricky_pages_are_cut_as_the_renderer_cuts_them(admin, body):
    assert assistant_blocks(admin, "notes/tricky", body) == rendered_blocks(body)


def generated(seed: int) -> str:
    """A page such as people write: headings, paragraphs with inline marks and pictures, lists
    (one level of nesting), fences holding Markdown, tables, quotes, rules, setext headings."""
    rnd = random.Random(seed)
    words = "alpha beta `code` **bold** _it_ [[link]] ![img](/_/files/notes/p/a.png) [doc](/_/files/notes/p/r.pdf) a|b 1. - * # > ~ \\*".split()

    def text(n: int = 0) -> str:
        return " ".join(rnd.choice(words) for _ in range(n or rnd.randint(1, 8)))

    def listing() -> str:
        ordered = rnd.random() < 0.4
        marker = rnd.choice("-*+")
        items = []
        for k in range(rnd.randint(1, 4)):
            m = f"{k + 1}." if ordered else marker
            pad = " " * (len(m) + 1)
            item = [f"{m} {text()}"]
            roll = rnd.random()
            if roll < 0.2:
                item.append(pad + text())
            elif roll < 0.3:
                item += [pad + f"- {text()}" for _ in range(2)]
            elif roll < 0.4:
                item += ["", pad + text()]
            elif roll < 0.45:
                item += [pad + "```", pad + "# not a heading", "", pad + "```"]
            items.append("\n".join(item) + ("\n" if rnd.random() < 0.2 else ""))
        return "\n".join(items).rstrip("\n")

    def fence() -> str:
        mark = rnd.choice(["```", "~~~", "````"])
        inside = [rnd.choice(["# inside", "- x", "code()", "", "> q"]) for _ in range(rnd.randint(0, 4))]
        return "\n".join([mark + rnd.choice(["", "python", "mermaid"]), *inside, mark])

    def table() -> str:
        cols = rnd.randint(1, 3)
        rows = ["| " + " | ".join(text(1) for _ in range(cols)) + " |", "|" + "|".join("---" for _ in range(cols)) + "|"]
        return "\n".join(rows + ["| " + " | ".join(text(1) for _ in range(cols)) + " |" for _ in range(rnd.randint(0, 3))])

    makers = [
        lambda: "\n".join(text() for _ in range(rnd.randint(1, 3))), listing, fence, table,
        lambda: "\n".join("> " + rnd.choice([text(), "- item", "", "## q"]) for _ in range(rnd.randint(1, 3))),
        lambda: "#" * rnd.randint(1, 6) + " " + text(rnd.randint(1, 3)) + rnd.choice(["", " ##"]),
        lambda: "---", lambda: "    indented code", lambda: text() + "\n" + rnd.choice(["===", "---"]),
    ]  # fmt: skip
    return "".join(rnd.choice(makers)() + rnd.choice(["\n\n", "\n\n", "\n", "\n\n\n"]) for _ in range(rnd.randint(1, 14)))


def test_generated_pages_are_cut_as_the_renderer_cuts_them(admin):
    for seed in range(200):
        body = generated(seed)
        assert assistant_blocks(admin, "notes/generated", body) == rendered_blocks(body), (seed, body)
