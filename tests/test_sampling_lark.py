"""Oracle (c), first half: documents sampled under cfgmask's masks must parse with Lark.

For each test grammar (``tests/grammars/*.lark``) and each bundled grammar
(``grammars/{json,sql,javascript}.lark``, skipped while missing) we sample
documents at random under cfgmask's masks with a real vocabulary (SmolLM2;
without it the tests skip, saying so) and parse every finished document with
``lark.Lark(grammar, parser="earley", lexer="dynamic")``, the external oracle.

Sampling, per step (fixed seed, so failures reproduce):

* EOS, when the mask allows it, is taken with probability 0.05 growing to 1
  at ``SOFT_CAP`` tokens (or ``SOFT_CAP_BYTES`` bytes);
* before ``SOFT_CAP`` the draw depends on the document's profile (half the
  documents each).  "Wild": 25% a random allowed single ASCII punctuation
  byte, 25% a random allowed token of at most 2 bytes, 25% any allowed token
  (uniformly), 25% of 16 random allowed tokens the one after which the most
  lexemes are complete (per the reference).  "Structured": the same over
  allowed tokens of 1-3 printable ASCII bytes (45% most lexemes, 45% uniform)
  and 10% any allowed token.  Both make documents cross many lexemes and nest
  instead of staying inside one long string, comment or identifier;
* from there on, the sampler steers towards the end: it takes the
  allowed single-byte token that most shortens the estimated completion
  (shortest derivation from the Earley chart of ``tests/reference.py``; on a
  tie, the byte that leaves the shorter pending lexeme, so that comments and
  whitespace end; then at random).  That heuristic is not an oracle, only a way to finish:
  documents still open at ``HARD_CAP`` tokens are discarded, counted, and at
  least 90% must finish.

Failures reported (all collected, then asserted): a finished document Lark
rejects, ``DeadEnd`` from ``fill_bitmask`` (the mask allowed a token that
leads nowhere), ``consume`` refusing a token the mask allowed, the mask's EOS
bit disagreeing with ``is_accepting()`` or with the reference, and a token
the mask allowed that the reference refuses (the reference follows every
sample; this is the only hole check the SQL and JavaScript grammars get from
the reference).
"""

import functools
from pathlib import Path

import lark
import numpy as np
import pytest

import cfgmask
from tests.reference import Reference

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SEED = 20250611
SOFT_CAP = 30      # tokens; from here on the sampler steers towards EOS
SOFT_CAP_BYTES = 200  # ... and from this many bytes on (keeps Lark's parse time down)
HARD_CAP = 100     # tokens; a document still open here is discarded
MIN_FINISHED = 0.9
MAX_REPORTED = 6

# name -> (path, docs in the default run, docs in the slow run)
GRAMMARS = {
    "json_small": (HERE / "grammars" / "json_small.lark", 200, 1000),
    "arith": (HERE / "grammars" / "arith.lark", 200, 1000),
    "nullable": (HERE / "grammars" / "nullable.lark", 200, 1000),
    "ignore": (HERE / "grammars" / "ignore.lark", 200, 1000),
    "keywords": (HERE / "grammars" / "keywords.lark", 200, 1000),
    "keywords_wb": (HERE / "grammars" / "keywords_wb.lark", 200, 1000),
    "lookahead": (HERE / "grammars" / "lookahead.lark", 200, 1000),
    "json": (ROOT / "grammars" / "json.lark", 200, 1000),
    "sql": (ROOT / "grammars" / "sql.lark", 100, 500),
    "javascript": (ROOT / "grammars" / "javascript.lark", 25, 200),
}


def sampling_vocab():
    """SmolLM2's vocabulary; without it the test is skipped, with the reason
    (sampling with a made-up byte vocabulary would test a different tokenizer
    from the one documented here)."""
    from support.vocabs import smollm2_vocab
    try:
        return smollm2_vocab()
    except pytest.skip.Exception as e:
        pytest.skip(f"sampling under masks needs SmolLM2's vocabulary: {e}")


class Sampler:
    def __init__(self, name, text=None, grammar=None):
        """``name`` from GRAMMARS, or any name with the grammar's ``text`` and
        loaded ``grammar`` (the SQL dialects, composed at load time)."""
        if text is None:
            path = GRAMMARS[name][0]
            if not path.exists():
                pytest.skip(f"{path.relative_to(ROOT)} does not exist yet")
            text = path.read_text(encoding="utf-8")
            grammar = cfgmask.Grammar.from_file(path)
        else:
            path = ROOT / "grammars" / "sql.lark"
        self.name = name
        self.text = text
        self.grammar = grammar
        self.vocab = sampling_vocab()
        self.compiled = cfgmask.compile(self.grammar, self.vocab)
        self.ref = Reference(self.grammar)
        # ambiguity="forest": Lark's Earley recognizer, without turning the forest into a tree
        self.lark = lark.Lark(self.text, parser="earley", lexer="dynamic", ambiguity="forest",
                              import_paths=[str(path.parent)])
        lens = np.array([len(b) if b is not None else 0 for b in self.vocab.token_bytes]
                        + [0] * (self.vocab.vocab_size - len(self.vocab.token_bytes)))
        self.tok_len = lens
        self.eos = np.array(sorted(self.vocab.eos_token_ids), dtype=np.int64)
        self.single = {int(t): self.vocab.token_bytes[t] for t in np.flatnonzero(lens == 1)}
        self.punct = np.zeros(len(lens), dtype=bool)  # one ASCII punctuation byte
        for t, b in self.single.items():
            self.punct[t] = 33 <= b[0] < 127 and not chr(b[0]).isalnum()
        self.short_ascii = np.zeros(len(lens), dtype=bool)  # 1-3 printable ASCII bytes (or "\n")
        for t, b in enumerate(self.vocab.token_bytes):
            self.short_ascii[t] = b is not None and len(b) <= 3 and all(32 <= c < 127 or c == 10 for c in b)

    def sample(self, rng, failures):
        """One document: bytes if it finished, None if it hit HARD_CAP (or failed)."""
        m = self.compiled.matcher()
        vocab, ref = self.vocab, self.ref
        prefix = b""
        st = ref.initial()  # the reference follows along (steering, and a cheap hole check)
        structured = rng.random() < 0.5
        for n in range(HARD_CAP):
            try:
                allowed = m.allowed_tokens()
            except cfgmask.DeadEnd as e:
                failures.append(f"DeadEnd after {prefix!r}: {e}")
                return None
            eos_ok = bool(np.isin(self.eos, allowed).any())
            if eos_ok != m.is_accepting():
                failures.append(f"EOS bit {eos_ok} but is_accepting() {not eos_ok} after {prefix!r}")
                return None
            if eos_ok != ref.eos_allowed(st):
                failures.append(f"EOS bit {eos_ok} but the reference says {not eos_ok} after {prefix!r}")
                return None
            choices = allowed[~np.isin(allowed, self.eos)]
            exploring = n < SOFT_CAP and len(prefix) < SOFT_CAP_BYTES
            p_eos = 0.05 + 0.95 * min(1.0, n / SOFT_CAP) if exploring else 1.0
            if eos_ok and (len(choices) == 0 or rng.random() < p_eos):
                m.consume(int(self.eos[0]))
                assert m.is_finished()
                return prefix
            if exploring:
                tok = self._explore(rng, st, choices, structured)
            else:
                tok = self._steer(rng, st, choices)
            try:
                m.consume(tok)
            except cfgmask.TokenRejected:
                failures.append(f"consume({tok}, {vocab.token_bytes[tok]!r}) refused a token the mask allowed "
                                f"after {prefix!r}")
                return None
            st2 = ref.push_bytes(st, vocab.token_bytes[tok])
            if st2 is None:
                failures.append(f"the mask allowed {vocab.token_bytes[tok]!r} after {prefix!r} "
                                "but the reference refuses it")
                return None
            st = st2
            prefix += vocab.token_bytes[tok]
        return None

    def _explore(self, rng, st, choices, structured):
        r = rng.random()
        if structured:  # short printable tokens; 45% of the time the one that completes most lexemes
            pool = choices[self.short_ascii[choices]]
            if r < 0.1 or not len(pool):
                return int(rng.choice(choices))
            return self._most_lexemes(rng, st, pool) if r < 0.55 else int(rng.choice(pool))
        if r < 0.25:
            return self._most_lexemes(rng, st, choices)
        pool = choices
        if r < 0.5:
            pool = choices[self.punct[choices]]
        elif r < 0.75:
            pool = choices[self.tok_len[choices] <= 2]
        return int(rng.choice(pool if len(pool) else choices))

    def _most_lexemes(self, rng, st, pool):
        """Of 16 random tokens of ``pool``, the one after which the reference has scanned the most lexemes."""
        cands = [int(t) for t in rng.choice(pool, size=min(16, len(pool)), replace=False)]
        k0 = st.chart.k

        def gain(t):
            st2 = self.ref.push_bytes(st, self.vocab.token_bytes[t])
            return -1 if st2 is None else st2.chart.k - k0
        return max(cands, key=gain)

    def _steer(self, rng, st, choices):
        single = [int(t) for t in choices if int(t) in self.single]
        if not single:
            return int(rng.choice(choices))
        rng.shuffle(single)
        best, best_cost = None, None
        for t in single:
            st2 = self.ref.push_byte(st, self.single[t][0])
            # fewest bytes left; on a tie, prefer ending the pending lexeme (a comment,
            # whitespace) over growing it.  (A byte the reference refuses is caught
            # by ``sample`` if it is chosen.)
            cost = (self.ref.completion_cost(st2), st2.length if st2 else 0)
            if best is None or cost < best_cost:
                best, best_cost = t, cost
        return best

    def run(self, n_docs, seed=SEED):
        rng = np.random.default_rng(seed)
        failures, docs, unfinished = [], [], 0
        for _ in range(n_docs):
            doc = self.sample(rng, failures)
            if doc is None:
                unfinished += 1
                continue
            docs.append(doc)
            try:
                self.lark.parse(doc.decode("utf-8"))
            except (lark.exceptions.LarkError, UnicodeDecodeError) as e:
                failures.append(f"Lark rejects sampled document {doc!r}: {type(e).__name__}: {str(e)[:300]}")
        return docs, unfinished, failures


@functools.lru_cache(maxsize=None)
def sampler(name):
    return Sampler(name)


def _check(name, n_docs):
    s = sampler(name)
    docs, unfinished, failures = s.run(n_docs)
    assert not failures, (f"[{name}] {len(failures)} failure(s) in {n_docs} samples:\n  "
                          + "\n  ".join(failures[:MAX_REPORTED]))
    assert len(docs) >= MIN_FINISHED * n_docs, f"[{name}] only {len(docs)} of {n_docs} documents finished"
    # the samples are not degenerate: distinct documents, some longer than a few bytes
    assert len(set(docs)) >= min(len(docs), 20) * 0.5
    assert max(map(len, docs)) >= 10
    return docs, unfinished


@pytest.mark.parametrize("name", list(GRAMMARS))
def test_sampled_documents_parse_with_lark(name):
    _check(name, GRAMMARS[name][1])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRAMMARS))
def test_sampled_documents_parse_with_lark_full(name):
    s = sampler(name)
    docs, unfinished, failures = s.run(GRAMMARS[name][2], seed=SEED + 1)
    assert not failures, (f"[{name}] {len(failures)} failure(s):\n  " + "\n  ".join(failures[:MAX_REPORTED]))
    assert len(docs) >= MIN_FINISHED * GRAMMARS[name][2]
