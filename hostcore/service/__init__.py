"""The service layer: every access, validation, limit and basehash rule, applied once.

:class:`hostcore.service.wiki.Wiki` is bound to one principal; each module here is one family of
operations mixed into it, and each has a tools module of the same name in ``hostcore.tools``.
"""
