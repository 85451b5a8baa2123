"""A small labelled set for retrieval quality: documents on distinct subjects, each with a
paraphrase query that shares no word of four letters or more with it, a keyword query (a word
the document uses) and a reference code (``code(i)``, written at the document's end) to look it
up by, as people look up an invoice or a part number; and queries on subjects no document is
about, whose words no document holds (``UNRELATED``: a search should find nothing for them).
``check()`` holds the paraphrases and the unrelated queries to those rules.

Run, it prints the table of the ``search`` tool's quality per query shape: recall@5 and nDCG@10
(one relevant page per query) for paraphrases, exact words, codes and identifiers, misspellings
(``misspelt``: the keyword with two letters swapped) and multi-word questions (``QUESTIONS``,
which use some of the document's words among others), ranking by keyword only (the search
backend), meaning only (the pages nearest in meaning, above the embedder's floor), both fused
(reciprocal rank fusion, as search fuses them) and the tool as it runs (which fuses or not by the
query's shape: :func:`hostcore.service.search.fuses`), over an instance made of the set, its
distractors and ``--pages`` pages of filler, with the ``wordllama`` embedder.

Usage: ``python bench/labelled_set.py [--pages 200]``.
"""

from __future__ import annotations

import re

# (name, document text, paraphrase query, keyword query)
SET: list[tuple[str, str, str, str]] = [
    (
        "bread",
        "Knead the dough for ten minutes, then let it rise somewhere warm until doubled. Bake the loaf at 220 degrees until the crust sounds hollow when tapped.",
        "how do I make homemade bread",
        "crust",
    ),
    (
        "tax",
        "The quarterly filing deadline for income returns is the fifteenth of April. Late submissions incur a penalty and interest on the amount owed.",
        "when are taxes due",
        "penalty",
    ),
    (
        "cat",
        "Felines spend most of the day asleep and groom their fur with rough tongues. A kitten learns to hunt by stalking toys and insects.",
        "pet cats napping and cleaning themselves",
        "kitten",
    ),
    (
        "garden",
        "Sow tomato seeds indoors six weeks before the last frost, then transplant the seedlings into beds with compost and water them deeply.",
        "growing vegetables from seed",
        "seedlings",
    ),
    (
        "car",
        "Change the engine oil every ten thousand kilometres and check the tyre pressure monthly; worn brake pads squeal when the vehicle stops.",
        "automobile maintenance schedule",
        "brake",
    ),
    (
        "sleep",
        "Adults need seven to nine hours of rest each night. Screens before bedtime delay melatonin and make it harder to doze off.",
        "tips for insomnia",
        "melatonin",
    ),
    (
        "coffee",
        "Espresso is brewed by forcing hot water through finely ground beans at high pressure, producing a thick crema on top.",
        "making a strong caffeinated drink",
        "crema",
    ),
    (
        "football",
        "The striker scored twice in the second half and the goalkeeper saved a penalty, so the club won the league match.",
        "soccer game result",
        "goalkeeper",
    ),
    (
        "python",
        "Install the package with pip inside a virtual environment, then import the module and call its functions from your script.",
        "setting up a programming library",
        "virtual",
    ),
    (
        "rain",
        "Heavy showers and thunderstorms are forecast for the weekend, with strong winds along the coast and flooding in low valleys.",
        "bad weather predicted soon",
        "thunderstorms",
    ),
    (
        "piano",
        "Practise scales slowly with both hands, keeping the wrists relaxed, before playing the sonata at full tempo on the keyboard.",
        "learning a musical instrument",
        "sonata",
    ),
    (
        "flight",
        "Passengers must board the aircraft thirty minutes before departure; the airline allows one carry-on bag in the overhead bin.",
        "airport travel rules",
        "carry",
    ),
    (
        "doctor",
        "The physician listened to the patient's lungs, prescribed antibiotics for the infection and advised a week of bed rest.",
        "medical visit for an illness",
        "antibiotics",
    ),
    (
        "money",
        "Put a fixed share of each salary into a savings account and invest the rest in low-cost index funds for retirement.",
        "personal finance advice",
        "retirement",
    ),
    (
        "wedding",
        "The bride and groom exchanged rings under an arch of flowers, then guests danced at the reception until midnight.",
        "marriage ceremony celebration",
        "bride",
    ),
    (
        "moon",
        "Astronauts landed on the lunar surface in 1969, collected rocks and planted a flag before returning to Earth.",
        "space mission history",
        "astronauts",
    ),
    (
        "school",
        "Pupils sit their final examinations in June; teachers mark the papers and publish grades before the summer holidays.",
        "students taking tests",
        "examinations",
    ),
    (
        "fire",
        "If smoke fills the room, crawl low beneath it, feel doors for heat before opening them and call the emergency number.",
        "what to do in a blaze",
        "smoke",
    ),
    (
        "dog",
        "Walk the puppy twice daily, reward it with treats when it obeys, and keep its leash short near busy roads.",
        "training a young canine",
        "leash",
    ),
    (
        "election",
        "Voters queued at polling stations to cast ballots; the candidate with the most votes became mayor after the count.",
        "choosing a politician democratically",
        "ballots",
    ),
    (
        "ocean",
        "Coral reefs shelter thousands of fish species, but warming seas bleach the corals and threaten the whole ecosystem.",
        "marine life under threat",
        "coral",
    ),
    (
        "hiking",
        "Carry enough water, wear sturdy boots and tell someone your route before climbing the mountain trail alone.",
        "safety on a walk in the hills",
        "boots",
    ),
    (
        "painting",
        "The artist mixed oil pigments on a palette and applied thick strokes to the canvas to capture the sunset.",
        "creating a picture with colours",
        "canvas",
    ),
    (
        "recycling",
        "Rinse glass jars and plastic bottles before placing them in the blue bin; collection happens every second Tuesday.",
        "sorting household waste",
        "jars",
    ),
]
# Off-subject documents that share words with the paraphrase queries: a keyword ranking finds them.
DISTRACTORS: list[tuple[str, str]] = [
    ("candles", "Homemade candles: how do I make them? Melt beeswax, add a cotton wick and pour it into jars."),
    ("fees", "Club fees are due when the season starts; members who pay late lose their seat."),
    ("petshop", "The pet shop sells cages, bowls and cleaning sprays; cats and rabbits are adopted there."),
    ("seedbank", "A seed bank stores frozen samples of wild plants growing in deserts, not vegetables."),
    ("schedule", "The bus schedule changes in winter; the night service stops at the depot."),
    ("drinks", "Making a fruit punch for a party: mix juices, drop in ice and serve the drink cold."),
    ("gameshow", "The game show result surprised viewers: a retired nurse won the car."),
    ("library", "The public library lends books, films and a few musical scores to members."),
    ("travel", "Travel insurance covers lost luggage and cancelled trips, with rules that differ by country."),
    ("finance", "Corporate finance teams forecast cash flow and advise the board on mergers."),
    ("celebration", "The town held a celebration for its 500th anniversary with a parade and fireworks."),
    ("history", "The museum's history wing shows tools, coins and maps from the Roman era."),
    ("tests", "Blood tests measure sugar and cholesterol; students of medicine learn to read them."),
    ("walk", "A walk in the park after lunch helps digestion, say the hospital's dieticians."),
    ("colours", "Traffic lights use three colours, and the sequence differs in some countries."),
    ("waste", "Factories must report the chemical waste they produce each year to the regulator."),
]
# Queries on subjects none of the documents above is about, sharing no word with any of them.
UNRELATED: list[str] = [
    "xylophone", "volcano", "quantum physics", "knitting a scarf", "submarine", "origami cranes",
    "glaciers", "chess openings", "dinosaur fossils", "pottery glaze", "beekeeping", "lighthouse keeper",
    "zeppelin", "tattoo removal", "skateboard tricks", "archaeology excavation", "magnetic levitation",
    "embroidery", "cathedral architecture", "kangaroo", "sushi", "diamond", "robotics", "typewriter",
]  # fmt: skip
# A question per document, in its order: some of its words among others (the AND of every word fails).
QUESTIONS: list[str] = [
    "how long should I bake the loaf", "what is the penalty for late income returns", "how does a kitten learn to hunt",
    "when should I sow tomato seeds indoors", "how often should I change the engine oil", "how many hours of rest do adults need",
    "how is espresso brewed", "who saved the penalty in the league match", "how do I install the package with pip",
    "where is flooding forecast this weekend", "how should I practise scales", "how many carry-on bags does the airline allow",
    "what did the physician prescribe for the infection", "where should I invest for retirement",
    "where did the guests dance after the rings", "when did astronauts land on the lunar surface",
    "when do pupils sit their final examinations", "what should I do if smoke fills the room", "how often should I walk the puppy",
    "who became mayor after the count", "why do the corals bleach", "what boots to wear on the mountain trail",
    "what did the artist apply to the canvas", "when is the blue bin collected",
]  # fmt: skip
_STOP = frozenset("the and for with that this from what when your into have does about".split())


def code(i: int) -> str:
    """The reference code of document ``i``: letters and digits alike in form, unknown to any model."""
    return f"QX{(i * 7919) % 9000 + 1000}"


def document(i: int) -> str:
    return f"{SET[i][1]} Reference {code(i)}."


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in _STOP}


def check() -> None:
    """Raise if a paraphrase shares a word (four letters or more) with its document, a keyword is
    absent, or an unrelated query shares a word with any document."""
    everything = " ".join([text for _, text, _, _ in SET] + [text for _, text in DISTRACTORS]).lower()
    for query in UNRELATED:
        held = [w for w in re.findall(r"[a-z]+", query.lower()) if len(w) >= 3 and re.search(rf"\b{w}", everything)]
        if held:
            raise SystemExit(f"labelled set: the unrelated query {query!r} has {held} in some document")
    for name, text, paraphrase, keyword in SET:
        shared = words(text) & words(paraphrase)
        if shared:
            raise SystemExit(f"labelled set: the paraphrase of {name!r} shares {sorted(shared)} with it")
        if keyword.lower() not in text.lower():
            raise SystemExit(f"labelled set: the keyword of {name!r} is not in it")


def misspelt(word: str) -> str:
    """``word`` with its two middle letters swapped (or its last doubled when they are alike)."""
    middle = len(word) // 2
    swapped = word[: middle - 1] + word[middle] + word[middle - 1] + word[middle + 1 :]
    return swapped if swapped != word else word + word[-1]


def shapes() -> dict[str, list[str]]:
    """The queries of each shape, one per document of SET, in its order."""
    return {
        "paraphrases": [row[2] for row in SET],
        "exact words": [row[3] for row in SET],
        "codes": [code(i) for i in range(len(SET))],
        "misspellings": [misspelt(row[3]) for row in SET],
        "questions": QUESTIONS,
    }


def recall_at(rankings: list[list[str]], wanted: list[str], k: int = 5) -> float:
    return sum(w in r[:k] for r, w in zip(rankings, wanted, strict=True)) / len(wanted)


def ndcg_at(rankings: list[list[str]], wanted: list[str], k: int = 10) -> float:
    """nDCG@k with one relevant page per query: 1 / log2(rank + 1) when it is among the first k."""
    import math

    gains = [1 / math.log2(r.index(w) + 2) if w in r[:k] else 0.0 for r, w in zip(rankings, wanted, strict=True)]
    return sum(gains) / len(wanted)


def main() -> None:
    import argparse
    import os
    import tempfile
    from pathlib import Path
    from unittest import mock

    from hostcore import SYSTEM, create_app
    from hostcore.service import search as search_service

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200, help="filler pages beside the set and its distractors")
    args = parser.parse_args()
    check()
    with tempfile.TemporaryDirectory() as tmp:
        config = {"PLUGINS": ["git", "tokens", "sqlite", "wordllama"], "STORAGE": "git", "SEARCH": "sqlite",
                  "EMBEDDER": "wordllama", "RATE_LIMITS": {"requests": "off", "writes": "off"}}  # fmt: skip
        host = create_app(config, instance_path=Path(tmp)).extensions["hostcore"]
        try:
            wiki = host.wiki(SYSTEM)
            wiki.save_namespace("bench", title="Bench")
            for i, (name, *_) in enumerate(SET):
                wiki.save_page(f"bench/{name}", title=f"Note {name[:1].upper()}", body=document(i))
            for name, text in DISTRACTORS:
                wiki.save_page(f"bench/{name}", title=f"Note {name[:1].upper()}", body=text)
            filler = [text for _, text, _, _ in SET] + [text for _, text in DISTRACTORS]
            for n in range(args.pages):  # minutes of meetings quoting the set's sentences, shuffled
                lines = ". ".join(sorted(filler[(n * 7 + j * 13) % len(filler)].split(". ")[0] for j in range(3)))
                wiki.save_page(f"bench/minutes-{n}", title=f"Minutes {n}", body=f"The committee noted: {lines}.")
            host.indexes.wait()
            backend = host.indexes.search_backend()
            passages = host.indexes.passage_index()
            embedder = passages.embedder

            def keyword(q: str) -> list[str]:
                return [h.slug for h in backend.search(q, namespaces=None, limit=10).hits]

            def meaning(q: str) -> list[str]:
                return [n.slug for n in passages.nearest(embedder.embed_query(q), kind="page", namespaces=None, limit=10, least=embedder.relevant)]

            def fused(q: str) -> list[str]:
                with mock.patch.object(search_service, "fuses", lambda _q: search_service.plain_words(_q)):
                    return [h["slug"] for h in wiki.search(q, limit=10)["hits"]]

            def tool(q: str) -> list[str]:
                return [h["slug"] for h in wiki.search(q, limit=10)["hits"]]

            wanted = [f"bench/{name}" for name, *_ in SET]
            modes = {"keyword": keyword, "meaning": meaning, "fused": fused, "search": tool}
            load = os.getloadavg()
            print(f"{len(SET)} labelled pages, {len(DISTRACTORS)} distractors, {args.pages} filler pages; wordllama;"
                  f" load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")  # fmt: skip
            print(f"{'shape':13} " + " ".join(f"{m + ' r@5':>13} {m + ' nDCG':>13}" for m in modes) + "  search fuses")
            for shape, queries in shapes().items():
                row = []
                for rank in modes.values():
                    rankings = [rank(q) for q in queries]
                    row += [recall_at(rankings, wanted), ndcg_at(rankings, wanted)]
                fuses = sum(search_service.fuses(q) for q in queries)
                print(f"{shape:13} " + " ".join(f"{v:13.2f}" for v in row) + f"  {fuses}/{len(queries)}")
        finally:
            host.close()


if __name__ == "__main__":
    main()
