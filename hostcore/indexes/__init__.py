"""Derived state the core keeps from page events: the link graph, and the indexer that keeps it
and the search index current (a default plugin)."""
