"""Lark's parser for ``.lark`` text, built from a parse table computed ahead.

Lark reads grammar text with an LALR parser for its own grammar language
(``lark.load_grammar._get_parser``), built on first use in every process:
about 5 ms of LALR analysis on this machine, a quarter of json.lark's whole
cold start (docs/compile.md, "Cold start").  :func:`install` builds that same
front end (the same terminals, rules, tree-builder callbacks and lexer) with
the LALR table read from ``lark_meta_table.json`` instead of analysed again,
and leaves it where Lark looks for it first.

Invariants:

* the table is used only when its key matches the installed Lark: its version
  and a digest of its meta grammar (``TERMINALS`` and ``RULES`` of
  ``lark.load_grammar``); with any other Lark nothing is installed and Lark
  builds its own parser, as without this module;
* an installed table equals the one Lark computes, up to the numbering of
  states (tests/test_lark_meta.py compares them in a fresh process);
* nothing is installed once Lark has built its parser in this process.

The table is written by ``python -m tools.lark_meta_table`` (after a Lark
upgrade; the tests say when the installed Lark has no table).
"""

import hashlib
import json
import os
import threading

TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lark_meta_table.json")
_lock = threading.Lock()


def meta_grammar_key():
    """``"<lark version>:<sha1 of its meta grammar>"``, the key of a table."""
    import lark
    from lark import load_grammar as L
    text = repr(sorted(L.TERMINALS.items())) + repr(sorted(L.RULES.items()))
    return f"{lark.__version__}:{hashlib.sha1(text.encode()).hexdigest()}"


def meta_confs():
    """``(lexer_conf, parser_conf)`` of Lark's meta grammar, made as
    ``lark.load_grammar._get_parser`` makes them (lark 1.3)."""
    import re

    from lark import load_grammar as L
    from lark.common import LexerConf, ParserConf
    from lark.grammar import NonTerminal, Rule, RuleOptions
    from lark.lexer import PatternRE, TerminalDef
    from lark.parse_tree_builder import ParseTreeBuilder

    terminals = [TerminalDef(name, PatternRE(value)) for name, value in L.TERMINALS.items()]
    rules = [(name.lstrip("?"), x, RuleOptions(expand1=name.startswith("?")))
             for name, x in L.RULES.items()]
    rules = [Rule(NonTerminal(r), [L.symbol_from_strcase(s) for s in x.split()], i, None, o)
             for r, xs, o in rules for i, x in enumerate(xs)]
    callback = ParseTreeBuilder(rules, L.ST).create_callback()
    lexer_conf = LexerConf(terminals, re, ["WS", "COMMENT", "BACKSLASH"])
    parser_conf = ParserConf(rules, callback, ["start"])
    lexer_conf.lexer_type = "basic"
    parser_conf.parser_type = "lalr"
    return lexer_conf, parser_conf


def analyse(parser_conf):
    """Lark's own LALR analysis of ``parser_conf``, as an ``IntParseTable`` (what the
    stored table replaces; the tool that writes it and the tests run this)."""
    from lark.parsers.lalr_analysis import IntParseTable, LALR_Analyzer
    analysis = LALR_Analyzer(parser_conf)
    analysis.compute_lalr()
    table = analysis.parse_table
    return table if isinstance(table, IntParseTable) else IntParseTable.from_ParseTable(table)


def table_to_json(parse_table, rules):
    """A Lark ``IntParseTable`` as plain data: a reduction names its rule by its
    index in ``rules``.  None when a reduction's rule is not among ``rules``."""
    from lark.parsers.lalr_analysis import Shift
    index = {r: i for i, r in enumerate(rules)}
    # states numbered breadth first from the start states, tokens in sorted order, so
    # that the file does not change with the hash seed of the process that wrote it
    number = {}
    queue = [parse_table.start_states[k] for k in sorted(parse_table.start_states)]
    for s in queue:
        if s not in number:
            number[s] = len(number)
            for token in sorted(parse_table.states[s]):
                action, arg = parse_table.states[s][token]
                if action is Shift and arg not in number:
                    queue.append(arg)
    for s in parse_table.states:          # none expected: every state is reached from a start
        number.setdefault(s, len(number))
    states = {}
    for s, actions in sorted(parse_table.states.items(), key=lambda kv: number[kv[0]]):
        row = {}
        for token in sorted(actions):
            action, arg = actions[token]
            if action is Shift:
                row[token] = [0, number[arg]]
            elif arg in index:
                row[token] = [1, index[arg]]
            else:
                return None
        states[str(number[s])] = row
    return {"states": states,
            "start_states": {k: number[v] for k, v in parse_table.start_states.items()},
            "end_states": {k: number[v] for k, v in parse_table.end_states.items()}}


def table_from_json(data, rules):
    """The ``IntParseTable`` :func:`table_to_json` wrote."""
    from lark.parsers.lalr_analysis import IntParseTable, Reduce, Shift
    states = {int(s): {token: (Shift, arg) if kind == 0 else (Reduce, rules[arg])
                       for token, (kind, arg) in row.items()}
              for s, row in data["states"].items()}
    return IntParseTable(states, dict(data["start_states"]), dict(data["end_states"]))


def _stored_table(key):
    try:
        with open(TABLE_FILE, encoding="utf-8") as f:
            return json.load(f).get(key)
    except (OSError, ValueError):
        return None


def install():
    """Build Lark's ``.lark`` parser from the stored table, if Lark has not built
    one yet and the table is for this Lark.  Returns whether it installed it."""
    from lark import load_grammar as L
    if hasattr(L._get_parser, "cache"):
        return False
    with _lock:
        if hasattr(L._get_parser, "cache"):
            return False
        try:
            key = meta_grammar_key()
        except (AttributeError, TypeError):      # a Lark without these internals
            return False
        data = _stored_table(key)
        if data is None:
            return False
        from lark.parser_frontends import ParsingFrontend
        from lark.parsers.lalr_parser import LALR_Parser, _Parser
        lexer_conf, parser_conf = meta_confs()
        table = table_from_json(data, parser_conf.rules)
        parser = LALR_Parser.__new__(LALR_Parser)
        parser._parse_table = table
        parser.parser_conf = parser_conf
        parser.parser = _Parser(table, parser_conf.callbacks, False)
        L._get_parser.cache = ParsingFrontend(lexer_conf, parser_conf, None, parser=parser)
        return True
