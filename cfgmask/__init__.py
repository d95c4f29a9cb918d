"""cfgmask: exact grammar-constrained token masks for language models.

Read the modules in this order to follow a grammar from ``.lark`` text to a
bitmask (docs/architecture.md, "The map", has the layers and their import
rules): ``grammar`` (the IR: flat CFG + terminal regexes), ``frontends``
(``lark_loader`` and ``lark_frontend``: Lark text -> IR; ``json_schema``:
schema -> IR), ``automata`` (regex -> byte DFA), then ``engine``: ``lexer``
(terminal DFAs -> lazy union automaton tables), ``vocab`` and ``trie``
(tokenizer -> token bytes -> flat token trie), ``prepared``, ``slices``,
``compiler`` (glue), and the Cython runtime in ``_fast`` (``_lexer``,
``_earley``, ``_runtime``, ``_matcher``).  The integrations (``hf``,
``generate``, ``vllm``, ``kernels``) apply the masks; ``app`` is the console
script.  Submodules are imported on first use so that ``import cfgmask``
stays cheap.
"""

__version__ = "0.1.0"

# first: the compile-time modules' compiled or source form (compiled_python.py)
from cfgmask import compiled_python as _compiled_python
_compiled_python.install()

from cfgmask.errors import (BudgetExceeded, CfgmaskError, CompileBudgetExceeded, ConfigurationError,
                     DeadEnd, GrammarError, GrammarWarning, TokenRejected)

_LAZY = {
    "Grammar": "grammar",
    "Vocabulary": "engine.vocab",
    "compile": "engine.compiler",
    "CompiledGrammar": "engine.compiler",
    "Matcher": "engine.compiler",
    "generate": "generate",  # the module, which is callable: cfgmask.generate(model, tok, grammar, prompt, ...)
}

__all__ = [
    "Grammar", "Vocabulary", "compile", "CompiledGrammar", "Matcher", "generate",
    "CfgmaskError", "GrammarError", "ConfigurationError", "BudgetExceeded", "CompileBudgetExceeded",
    "TokenRejected", "DeadEnd", "GrammarWarning", "__version__",
]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'cfgmask' has no attribute {name!r}")
    import importlib
    module = importlib.import_module(f".{mod}", __name__)
    value = module if name == mod else getattr(module, name)
    globals()[name] = value
    return value
