"""The :class:`~cfgmask.errors.GrammarError` values the regex pipeline refuses with.

One constructor per kind of refusal, so that every stage words the same
refusal the same way.  Invariant: each error names the terminal (``where``)
and the refused construct (``construct``), and both appear in the message.
"""

from cfgmask.errors import GrammarError

__all__ = ["too_large", "too_deep", "unsupported"]


def too_large(name, limit, what):
    """More than ``limit`` states in the ``what`` (``"NFA"`` or ``"DFA"``) of terminal ``name``."""
    return GrammarError(
        f"terminal {name}: automaton too large (more than {limit} states in the {what}); "
        f"bounded repeats such as {{m,n}} are expanded copy by copy, so simplify "
        f"the pattern or raise max_states",
        where=name, construct="automaton size")


def too_deep(name):
    """The regex of terminal ``name`` nests deeper than Python's recursion limit allows."""
    return GrammarError(f"terminal {name}: the regex is nested too deeply (Python's recursion "
                        "limit was hit; flatten the nested groups)", where=name, construct="nesting depth")


def unsupported(name, construct, why):
    """Terminal ``name`` uses ``construct``, which no byte DFA here expresses (``why``)."""
    return GrammarError(f"terminal {name}: {construct} is not supported ({why})",
                        where=name, construct=construct)

