"""The compile budget of the JSON Schema front end, and its count limits.

Some schemas describe a language whose grammar is exponential (``anyOf``
nested in ``allOf``, many overlapping conditionals) or huge (``minItems:
10**9``).  The front end charges one unit of work per typed-alternative node
it builds, per case of a split and per grammar rule it writes; when the work
passes ``max_work`` or the clock passes ``time_limit_s`` it raises
:class:`~cfgmask.CompileBudgetExceeded` (a :class:`~cfgmask.GrammarError`)
naming the keyword and the JSON pointer it was expanding.  Counts
(``minItems``, ``maxItems``, ``minProperties``, ``maxProperties``,
``minContains``, ``maxContains``, ``maxLength`` of a chunked string) that
would be unrolled past :data:`MAX_COUNT` are refused up front, with the
limit in the message, before any work is done.
"""

import contextlib
import time

from cfgmask.automata import progress
from cfgmask.errors import CompileBudgetExceeded, ConfigurationError, GrammarError

# 28x the most any of the 200 JSONSchemaBench schemas or the 8 stalled MaskBench ones
# uses (7,053); a unit is a node, a split case or a grammar rule (~0.01-1 ms each)
DEFAULT_MAX_WORK = 200_000
# the whole from_json_schema answers (compiled or refused) within ~10 s
DEFAULT_TIME_LIMIT_S = 8.0
# counts are unrolled one grammar symbol per step up to this
MAX_COUNT = 10_000
# a long string without a pattern is one grammar symbol per 64 characters
MAX_CHUNKED_LENGTH = 1 << 21
# the strings of an enum/const set are one automaton, about one state per node of their
# byte trie, a 1 KiB table row each: 10,000 strings of 13 characters are 60,000
MAX_LITERAL_STATES = 1 << 18


class Budget:
    """Work counter plus deadline; ``charge`` raises once either is spent."""

    def __init__(self, max_work=DEFAULT_MAX_WORK, time_limit_s=DEFAULT_TIME_LIMIT_S):
        # a bad option is the caller's mistake, not the schema's: ConfigurationError naming it
        if max_work is not None and (isinstance(max_work, bool) or not isinstance(max_work, int)
                                     or max_work < 1):
            raise ConfigurationError(f"max_work must be a positive int or None, not {max_work!r:.40}")
        if time_limit_s is not None and (isinstance(time_limit_s, bool)
                                         or not isinstance(time_limit_s, (int, float))
                                         or not 0 < time_limit_s < float("inf")):
            raise ConfigurationError(f"time_limit_s must be a positive finite number or None, "
                                     f"not {time_limit_s!r:.40}")
        self.max_work = max_work
        self.time_limit_s = time_limit_s
        self.work = 0
        self.start = time.perf_counter()
        self.deadline = None if time_limit_s is None else self.start + time_limit_s
        self.where = ("schema", "#")   # (keyword, displayed pointer) being expanded

    def charge(self, n=1, keyword=None, where=None):
        self.work += n
        if self.max_work is not None and self.work > self.max_work:
            self._raise(f"more than max_work={self.max_work} units of work", keyword, where,
                        f"max_work={self.max_work}")
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self._raise(f"more than time_limit_s={self.time_limit_s:g} s", keyword, where,
                        f"time_limit_s={self.time_limit_s:g}")

    def check_time(self, keyword=None, where=None):
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self._raise(f"more than time_limit_s={self.time_limit_s:g} s", keyword, where,
                        f"time_limit_s={self.time_limit_s:g}")

    def _raise(self, what, keyword, where, limit):
        k, w = self.where
        keyword = keyword or k
        where = where or w
        raise CompileBudgetExceeded(
            f"JSON schema: compiling {keyword} at {where} took {what} (the compile budget; "
            f"pass max_work=/time_limit_s= to compile_schema or Grammar.from_json_schema to "
            f"raise it, or simplify the schema)", where=where, construct=keyword, limit=limit)


@contextlib.contextmanager
def active(budget):
    """Let long automaton constructions (the subset construction) check the deadline."""
    old = getattr(progress, "hook", None)
    progress.hook = budget.check_time if budget.deadline is not None else None
    try:
        yield budget
    finally:
        progress.hook = old


def check_count(keyword, value, where, limit=MAX_COUNT, what=None):
    """Refuse a count that would be unrolled past ``limit`` (``where``: displayed pointer)."""
    if value is not None and value > limit:
        if what is not None:
            raise GrammarError(f"JSON schema: {keyword} at {where}: {what}, above the limit "
                               f"({limit})", where=where, construct=keyword)
        raise GrammarError(f"JSON schema: {keyword} {value} at {where} is above the largest count "
                           f"the grammar unrolls (limit {limit}): it is refused rather than unrolled",
                           where=where, construct=keyword)
