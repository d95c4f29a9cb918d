#!/usr/bin/env python3
"""Which JSON whitespace style lets the default model finish? (docs/json-schema.md)

Runs the default model (SmolLM2-135M-Instruct, CPU) constrained by a small
schema (name, age, colors) and by the generation form of the plain JSON
grammar (``cfgmask.frontends.json_schema.json_grammar``), in each whitespace style, at
temperature 0 and 0.7, with the settings ``cfgmask generate`` uses
(repetition penalty 1.2, system prompt "Reply with JSON only."; with
``--schema-in-prompt`` the schema is in it too), and reports per
style: how many runs ended with EOS within ``--max-new-tokens``, how many of
those outputs are valid (``json.loads`` + the ``jsonschema`` package), and
the mean number of tokens.  Prints a Markdown table.

    python -m scripts.json_style_eval [--max-new-tokens 120] [--seeds 2]
"""

import argparse
import json
import sys
import time


SMALL_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "colors": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "colors"],
    "additionalProperties": False,
}
PROMPTS = [
    "Describe a small red cat as a JSON object with fields name, age and colors.",
    "Give me a JSON object for a dog: its name, its age and the colors of its fur.",
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-new-tokens", type=int, default=120)
    ap.add_argument("--seeds", type=int, default=2, help="sampled runs per prompt at temperature 0.7")
    ap.add_argument("--styles", default="compact,pretty,flexible")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--schema-in-prompt", action="store_true",
                    help="put the schema in the system prompt (default: 'Reply with JSON only.', "
                         "what cfgmask generate --schema does)")
    args = ap.parse_args(argv)

    import jsonschema
    import torch
    from cfgmask import Grammar
    from cfgmask import compile as compile_grammar
    from cfgmask import models
    from cfgmask.hf import GrammarLogitsProcessor
    from cfgmask.frontends.json_schema import compile_schema, json_grammar
    from cfgmask.app.schema_source import SCHEMA_PROMPT, SYSTEM_PROMPT
    from cfgmask.engine.vocab import Vocabulary

    if args.threads:
        torch.set_num_threads(args.threads)
    model, tok, info = models.load(None, progress=lambda m: print(m, file=sys.stderr))
    emb = model.get_output_embeddings()
    vocab = Vocabulary.from_hf(tok, vocab_size=max(int(emb.weight.shape[0]), len(tok)))
    eos = vocab.eos_token_ids[0]
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos

    def run(compiled, system, prompt, temperature, seed):
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        enc = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt",
                                      return_dict=True)
        kw = dict(max_new_tokens=args.max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                  repetition_penalty=1.2)
        if temperature:
            kw.update(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
        else:
            kw.update(do_sample=False)
        proc = GrammarLogitsProcessor(compiled, eos_token_id=eos, pad_token_id=pad)
        torch.manual_seed(seed)
        out = model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                             logits_processor=[proc], **kw)
        gen = out[0, enc["input_ids"].shape[1]:].tolist()
        (data, complete), = proc.finish(out)
        n = gen.index(eos) + 1 if eos in gen else len(gen)
        return data.decode("utf-8", errors="replace"), complete, n

    rows = []
    samples = []
    for style in args.styles.split(","):
        for gname, grammar, schema in (("schema", compile_schema(Grammar, SMALL_SCHEMA, whitespace=style),
                                        SMALL_SCHEMA),
                                       ("json", json_grammar(Grammar, style), True)):
            compiled = compile_grammar(grammar, vocab)
            system = (SCHEMA_PROMPT.format(schema=json.dumps(SMALL_SCHEMA, separators=(",", ":")))
                      if gname == "schema" and args.schema_in_prompt else SYSTEM_PROMPT)
            for temperature in (0.0, 0.7):
                seeds = [0] if not temperature else list(range(args.seeds))
                done = valid = tokens = total = 0
                t0 = time.perf_counter()
                for prompt in PROMPTS:
                    for seed in seeds:
                        text, complete, n = run(compiled, system, prompt, temperature, seed)
                        total += 1
                        tokens += n
                        ok = False
                        if complete:
                            done += 1
                            try:
                                jsonschema.validate(json.loads(text), schema)
                                ok = True
                            except Exception:
                                ok = False
                            valid += ok
                        samples.append((style, gname, temperature, complete, ok, text))
                        print(f"[{style} {gname} T={temperature} seed={seed}] complete={complete} "
                              f"valid={ok} tokens={n}: {text!r}", file=sys.stderr, flush=True)
                rows.append((style, gname, temperature, f"{done}/{total}", f"{valid}/{total}",
                             f"{tokens / total:.0f}", f"{time.perf_counter() - t0:.0f}"))
    print(f"model {info['name']}, max_new_tokens={args.max_new_tokens}, repetition penalty 1.2, "
          f"{len(PROMPTS)} prompts, temperature 0.7: {args.seeds} seeds per prompt, schema in the "
          f"system prompt: {args.schema_in_prompt}\n")
    print("| style | grammar | temperature | ended (EOS) | valid | mean tokens | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print("\nOutputs:")
    for style, gname, temperature, complete, ok, text in samples:
        print(f"- {style}/{gname}/T={temperature} ({'ended' if complete else 'cut'}, "
              f"{'valid' if ok else 'not valid'}): `{text[:160]!r}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
