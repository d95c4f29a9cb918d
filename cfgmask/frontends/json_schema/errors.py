"""The one internal signal of the JSON Schema front end.

Helpers deep inside (pattern translation, number automata, ...) raise
:class:`Unsupported` with the keyword and the reason.  The schema walker
(``normalize.py``) catches it where it knows the JSON pointer and turns it
into a :class:`~cfgmask.GrammarError` (``strict=True``) or a loosening with a
warning (``strict=False``).  Nothing outside this package sees it.
"""


class Unsupported(Exception):
    """A keyword value cannot be compiled exactly (``keyword``, ``why``, maybe ``where``)."""

    def __init__(self, keyword, why, where=None):
        super().__init__(f"{keyword}: {why}")
        self.keyword = keyword
        self.why = why
        self.where = where  # the keyword's JSON pointer, where the raiser knows it
