"""The seams plugins implement: the hook specifications, the storage and search base classes,
the ``@tool``/``@resource``/``@prompt`` decorators and the inter-process file lock.

Plugins import these through ``hostcore`` (the public surface), not from here.
"""
