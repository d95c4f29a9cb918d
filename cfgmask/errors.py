"""The one error tree of cfgmask.

Everything cfgmask raises on purpose derives from :class:`CfgmaskError`.
Compile-time problems are :class:`GrammarError` (the grammar cannot be turned
into an exact mask) or :class:`ConfigurationError` (bad arguments).  Run-time
problems are :class:`TokenRejected` (the state is unchanged), :class:`DeadEnd`
(no token is allowed) and :class:`BudgetExceeded` (a work limit was hit).
Nothing is ever silently unconstrained: callers either get an exact mask or
one of these.
"""


class CfgmaskError(Exception):
    """Root of every error cfgmask raises on purpose."""


class GrammarError(CfgmaskError):
    """The grammar cannot be compiled to an exact mask.

    ``where`` names the rule or terminal, ``construct`` the offending piece
    (for example ``"lookbehind"``); both are also in the message.
    """

    def __init__(self, message, where=None, construct=None):
        super().__init__(message)
        self.where = where
        self.construct = construct


class ConfigurationError(CfgmaskError, ValueError):
    """A bad argument: wrong dtype or shape, unknown grammar name, ..."""


class BudgetExceeded(CfgmaskError):
    """A per-step work limit (Earley items per row, lexer states, ...) was hit."""


class CompileBudgetExceeded(GrammarError, BudgetExceeded):
    """A compile-time work limit was hit (JSON Schema: ``max_work`` / ``time_limit_s``).

    A :class:`GrammarError` (the grammar was not compiled) and a
    :class:`BudgetExceeded`; ``where`` is the JSON pointer, ``construct`` the
    keyword, ``limit`` the limit that was hit (as text).
    """

    def __init__(self, message, where=None, construct=None, limit=None):
        super().__init__(message, where=where, construct=construct)
        self.limit = limit


class TokenRejected(CfgmaskError):
    """``consume`` was given a token the mask does not allow; the matcher is unchanged."""

    def __init__(self, message, token_id=None, position=None):
        super().__init__(message)
        self.token_id = token_id
        self.position = position


class DeadEnd(CfgmaskError):
    """No token of the vocabulary is allowed in this state.

    ``state`` describes the parser/lexer state, ``prefix`` is the output so far (bytes).
    """

    def __init__(self, message, state=None, prefix=b""):
        super().__init__(message)
        self.state = state
        self.prefix = prefix


class GrammarWarning(UserWarning):
    """The grammar compiles, but part of it may not mean what its author meant.

    ``where`` names the terminal or rule.  The mask still follows the grammar
    exactly as Lark reads it; the warning says how to write the intended one.
    """

    def __init__(self, message, where=None):
        super().__init__(message)
        self.where = where
