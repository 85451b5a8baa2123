"""The embedder seam: plugins that turn text into vectors, so documents are found by meaning.

An embedder maps a list of texts to unit-length vectors of a fixed size: texts that mean the same
land close together (a dot product near 1), whatever words they use. ``EMBEDDER`` names the one
the wiki uses (registered via ``register_embedders``, like ``STORAGE`` and ``SEARCH``); with it
set, attachments' text and pages are cut into passages, embedded off the request path, and
``search_attachments`` finds by meaning as well as by words, and ``similar_pages`` appears.
Changing the embedder re-embeds everything (vectors of two models cannot be compared).

Embedding runs on the wiki's own CPU, in a background thread of each worker: an embedder loads
its model once per process (in :meth:`Embedder.load`, which a worker's background thread calls as
it starts, or else on first use) and must not fetch anything from the network at run time (ship
the model in the package).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hostcore.seams.settings import Setting, with_defaults

Vectors = npt.NDArray[np.float32]


class Embedder(ABC):
    """Base class of embedders. Registered by ``name`` via ``register_embedders``.

    Must implement :meth:`embed`. ``dimensions`` is the length of every vector, ``relevant`` the
    similarity from which a text counts as related to a query; the constructor
    receives the embedder's config (``PLUGIN_CONFIG.<name>`` checked against :attr:`settings`).
    Load the model lazily, once per process, in :meth:`load` (and from :meth:`embed` if not yet
    loaded): the host builds an embedder in every worker and in CLI commands that never embed
    anything, and calls :meth:`load` only where it will embed.
    """

    name: ClassVar[str] = ""
    dimensions: ClassVar[int] = 0
    # The cosine similarity below which a text is unrelated to a query, for this model: a passage
    # or page found by meaning alone counts only from here up (search_attachments, search's
    # results), so a query about nothing in the wiki finds nothing. Models differ (static ones
    # sit near 0 for unrelated texts, E5 near 0.7); measure with bench/document_search.py.
    relevant: ClassVar[float] = 0.0
    settings: ClassVar[Mapping[str, Setting]] = {}
    # The instance folder, where files derived from the model may be kept for every process of the
    # wiki to share (name them after the embedder); the host sets it before anything is embedded.
    # None: no folder (an embedder made outside a host), keep such things in memory.
    folder: Path | None = None

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.config = with_defaults(self.settings, config, f"the {self.name or type(self).__name__} embedder")

    def load(self) -> None:
        """Load the model now, if not yet done in this process. A worker's passage thread calls it
        as the worker starts, before any request can need it: loading holds Python's interpreter
        lock for a while (a model's files are read and unpacked), which, left to the first save,
        stalled every request of that worker under load. Nothing by default."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors of passages: an array of shape ``(len(texts), dimensions)``, float32, each row of
        length 1 (a text with no known word may give a row of zeros)."""

    def embed_query(self, text: str) -> Vectors:
        """The vector of a search query, shape ``(dimensions,)``. Models trained with a query
        prefix (E5's ``query:``) override this; by default a query is embedded like a passage."""
        return self.embed([text])[0]


def unit_rows(vectors: npt.NDArray[Any]) -> Vectors:
    """``vectors`` as float32 with each row scaled to length 1 (rows of zeros stay zero)."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
