"""The ``cfgmask`` console script: ``check``, ``generate`` (with a tiny local model), ``--help``.

``generate`` runs against a tiny random Llama saved with ``save_pretrained``
next to the real SmolLM2 tokenizer, so no real model is loaded; grammars that
leave the model a single choice make the output predictable.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cfgmask.app import cli

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# --------------------------------------------------------------------- check

def test_check_builtin_json(capsys):
    rc, out, err = run(capsys, "check", "json")
    assert rc == 0, err
    for name in ("STRING", "NUMBER", "LBRACE"):
        assert name in out
    assert "rules" in out and "terminals" in out and "ms" in out


def test_check_file_verbose_dumps_rules(tmp_path, capsys):
    g = tmp_path / "pairs.lark"
    g.write_text('start: pair ("," pair)*\npair: KEY "=" VALUE\nKEY: /[a-z]+/\nVALUE: /[0-9]+/\n'
                 '%ignore " "\n')
    rc, out, err = run(capsys, "check", str(g), "-v")
    assert rc == 0, err
    assert "KEY" in out and "[a-z]+" in out and "VALUE" in out
    assert "pair -> KEY" in out  # the rule dump
    assert "[%ignore]" in out
    # states per terminal are printed as numbers next to the names
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("KEY"))
    assert line.split()[1].isdigit()


def test_check_start_rule(capsys):
    rc, out, err = run(capsys, "check", "json", "--start", "object")
    assert rc == 0, err
    assert "start: object" in out


BAD = {
    "lookbehind": ('start: A\nA: /(?<=x)a/\n', "A"),
    "backreference": ('start: WORD\nWORD: /(a)\\1/\n', "WORD"),
    "empty terminal": ('start: "x" MAYBE\nMAYBE: /b*/\n', "MAYBE"),
    "undefined rule": ('start: missing_rule\n', "missing_rule"),
    "declare": ('start: _INDENT "x"\n%declare _INDENT\n', "_INDENT"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_check_bad_grammar_exits_2_and_names_the_culprit(case, tmp_path, capsys):
    text, culprit = BAD[case]
    g = tmp_path / "bad.lark"
    g.write_text(text)
    rc, out, err = run(capsys, "check", str(g))
    assert rc == 2
    assert culprit in err, err
    assert "Traceback" not in err


def test_check_unknown_grammar(capsys):
    rc, out, err = run(capsys, "check", "no-such-grammar")
    assert rc == 2
    assert "no-such-grammar" in err


def test_python_dash_m_help():
    r = subprocess.run([sys.executable, "-m", "cfgmask", "--help"], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    for cmd in ("check", "generate", "demo"):
        assert cmd in r.stdout


def test_python_dash_m_check_exit_code(tmp_path):
    g = tmp_path / "bad.lark"
    g.write_text('start: A\nA: /(?<=x)a/\n')
    r = subprocess.run([sys.executable, "-m", "cfgmask", "check", str(g)], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2
    assert "A" in r.stderr and "lookbehind" in r.stderr


# ------------------------------------------------------------------ generate

@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from cfgmask import models
    try:
        d = models.converted_dir(models.default_gguf_path())
    except Exception:
        d = None
    if d is not None and (d / "tokenizer.json").is_file():
        tok = transformers.AutoTokenizer.from_pretrained(str(d), local_files_only=True)
    else:
        from support.vocabs import smollm2_tokenizer
        tok = smollm2_tokenizer()
    cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, intermediate_size=128, vocab_size=len(tok),
                                   max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                                   pad_token_id=2)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    out = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_generate_forced_output(tiny_model_dir, tmp_path, capsys):
    g = tmp_path / "fixed.lark"
    g.write_text('start: "hello, world"\n')
    rc, out, err = run(capsys, "generate", "--model", str(tiny_model_dir), "--grammar", str(g),
                       "--max-new-tokens", "20", "--threads", "1", "say hi")
    assert rc == 0, err
    assert out == "hello, world\n"
    assert "ms/token" in err


def test_generate_quiet_prints_nothing_on_stderr(tiny_model_dir, tmp_path, capsys):
    """-q: no progress, no timing, and no transformers weight-loading bar (it printed one)."""
    g = tmp_path / "fixed.lark"
    g.write_text('start: "hello, world"\n')
    rc, out, err = run(capsys, "generate", "-q", "--model", str(tiny_model_dir), "--grammar", str(g),
                       "--max-new-tokens", "20", "--threads", "1", "say hi")
    assert rc == 0 and out == "hello, world\n"
    assert err == "", err


def test_generate_reports_forced_tokens(tiny_model_dir, tmp_path, capsys):
    """A grammar with one document is all forced: no model call after the prompt; the step path samples."""
    g = tmp_path / "fixed.lark"
    g.write_text('start: "hello, world"\n')
    rc, out, err = run(capsys, "generate", "--model", str(tiny_model_dir), "--grammar", str(g),
                       "--max-new-tokens", "20", "--threads", "1", "say hi")
    assert rc == 0 and out == "hello, world\n", err
    assert "1 model calls" in err and "forced" in err
    rc, out, err = run(capsys, "generate", "--model", str(tiny_model_dir), "--grammar", str(g),
                       "--max-new-tokens", "20", "--threads", "1", "--no-jump-forward", "say hi")
    assert rc == 0 and out == "hello, world\n", err
    assert "(0 forced" in err


def test_generate_out_of_tokens_exits_1(tiny_model_dir, tmp_path, capsys):
    g = tmp_path / "long.lark"
    g.write_text('start: "the quick brown fox jumps over the lazy dog"\n')
    rc, out, err = run(capsys, "generate", "--model", str(tiny_model_dir), "--grammar", str(g),
                       "--max-new-tokens", "2", "--threads", "1", "go")
    assert rc == 1
    assert out == ""  # nothing on stdout: an unfinished prefix is not a document
    assert "max-new-tokens" in err and "unfinished" in err


# A bounded JSON language: at most 19 bytes (`[false,false,false]`), so with at
# least one byte per token a random model finishes it within 20 steps (EOS included).
SMALL_JSON = 'start: "[" value ("," value)~0..2 "]"\nvalue: "true" | "false" | "null" | DIGIT\nDIGIT: /[0-9]/\n'


@pytest.mark.parametrize("seed", ["3", "4"])
def test_generate_json_sampled(tiny_model_dir, tmp_path, capsys, seed):
    import json
    g = tmp_path / "small_json.lark"
    g.write_text(SMALL_JSON)
    rc, out, err = run(capsys, "generate", "--model", str(tiny_model_dir), "--grammar", str(g),
                       "--max-new-tokens", "24", "--temperature", "1.0", "--seed", seed,
                       "--threads", "1", "-q", "x")
    assert rc == 0, err
    doc = json.loads(out)  # the oracle: what the CLI printed is a finished JSON document
    assert isinstance(doc, list) and 1 <= len(doc) <= 3, out
    assert all(v in (True, False, None) or (type(v) is int and 0 <= v <= 9) for v in doc), out


def test_generate_bad_grammar_exits_2(tmp_path, capsys):
    g = tmp_path / "bad.lark"
    g.write_text('start: A\nA: /(?<=x)a/\n')
    rc, out, err = run(capsys, "generate", "--grammar", str(g), "hi")
    assert rc == 2 and "lookbehind" in err


def test_missing_model_dir_exits_2(capsys, tmp_path):
    rc, out, err = run(capsys, "generate", "--model", str(tmp_path / "nope"), "hi")
    assert rc == 2 and "nope" in err


def test_closes_top_level_helper():
    assert cli._closes_top_level('Sure! {"a": "}", "b": [1]} more')
    assert not cli._closes_top_level('{"a": [1, 2')
    assert not cli._closes_top_level("no json here")
    assert cli._extract_json('x ```json\n[1, "]"]\n```') == '[1, "]"]'


# ------------------------------------------- clean errors before any work (issue 26)

@pytest.fixture
def no_model_load(monkeypatch):
    """Loading a model fails the test: every argument error must come before it."""
    from cfgmask import models

    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the arguments were checked")
    monkeypatch.setattr(models, "load", refuse)


def one_line_error(rc, err):
    assert rc == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_device_cuda_without_cuda_exits_2(capsys, no_model_load):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this torch has CUDA")
    line = one_line_error(*run(capsys, "generate", "--device", "cuda", "hi")[::2])
    assert "cuda" in line


def test_device_unknown_exits_2(capsys, no_model_load):
    pytest.importorskip("torch")
    line = one_line_error(*run(capsys, "generate", "--device", "nope", "hi")[::2])
    assert "nope" in line


def test_schema_with_grammar_is_refused(tmp_path, capsys, no_model_load):
    s = tmp_path / "s.json"
    s.write_text('{"type": "integer"}')
    line = one_line_error(*run(capsys, "generate", "--schema", str(s), "--grammar", "sql", "hi")[::2])
    assert "--schema" in line and "--grammar" in line


@pytest.mark.parametrize("value", ["-5", "0"])
def test_max_new_tokens_checked_before_the_model(value, capsys, no_model_load):
    line = one_line_error(*run(capsys, "generate", "--max-new-tokens", value, "hi")[::2])
    assert "--max-new-tokens" in line


@pytest.mark.parametrize("value", ["-1", "inf", "nan"])
def test_bad_temperature_exits_2(value, capsys, no_model_load):
    line = one_line_error(*run(capsys, "generate", "--temperature", value, "hi")[::2])
    assert "--temperature" in line


@pytest.mark.parametrize("opt,value", [("--threads", "0"), ("--repetition-penalty", "0"),
                                       ("--repetition-penalty", "nan"), ("--seed", str(2 ** 64))])
def test_other_numbers_checked(opt, value, capsys, no_model_load):
    line = one_line_error(*run(capsys, "generate", opt, value, "hi")[::2])
    assert opt in line


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_empty_prompt_exits_2(prompt, capsys, no_model_load):
    line = one_line_error(*run(capsys, "generate", prompt)[::2])
    assert "prompt" in line


@pytest.mark.parametrize("cmd", [["check", "json"], ["check", "sql"], ["generate", "--grammar", "sql", "hi"]])
def test_unknown_start_rule_names_it(cmd, capsys, no_model_load):
    line = one_line_error(*run(capsys, *cmd, "--start", "nosuchrule")[::2])
    assert "nosuchrule" in line and "NonTerminal" not in line


@pytest.mark.parametrize("value", ["-1", "0"])
def test_demo_prompts_must_be_positive(value, capsys, no_model_load):
    line = one_line_error(*run(capsys, "demo", "--prompts", value)[::2])
    assert "--prompts" in line


@pytest.mark.parametrize("cmd", [["check"], ["generate", "hi"]])
def test_empty_schema_path_exits_2(cmd, capsys, no_model_load):
    line = one_line_error(*run(capsys, *cmd, "--schema", "")[::2])
    assert "--schema" in line and "empty" in line


@pytest.mark.parametrize("cmd", [["check", "json", "--whitespace", "pretty"],
                                 ["generate", "--grammar", "sql", "--whitespace", "pretty", "hi"],
                                 ["generate", "--full-language", "--whitespace", "pretty", "hi"]])
def test_whitespace_needs_schema(cmd, capsys, no_model_load):
    line = one_line_error(*run(capsys, *cmd)[::2])
    assert "--whitespace" in line


def test_schema_directory_is_named(tmp_path, capsys):
    line = one_line_error(*run(capsys, "check", "--schema", str(tmp_path))[::2])
    assert "directory" in line and str(tmp_path) in line


def test_tables_that_need_quoting_compile(capsys, no_model_load, monkeypatch):
    """``--tables order`` used to end in KeyError: 'TABLE_NAME' (checked up to the model load)."""
    from cfgmask.app import cli as cli_mod

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop
    monkeypatch.setattr(cli_mod, "Session", stop)
    with pytest.raises(Stop):
        cli.main(["generate", "--grammar", "sql", "--tables", "order,a b", "hi"])
    line = one_line_error(*run(capsys, "generate", "--grammar", "sql", "--tables", " , ", "hi")[::2])
    assert "--tables" in line


def test_argparse_errors_are_one_line(capsys):
    line = one_line_error(*run(capsys, "generate", "--max-new-tokens", "lots", "hi")[::2])
    assert "--max-new-tokens" in line


def test_broken_pipe_is_quiet():
    """``cfgmask check ... | head -c 1``: no BrokenPipeError traceback."""
    p = subprocess.Popen([sys.executable, "-m", "cfgmask", "check", "sql", "-v"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=ROOT)
    p.stdout.read(1)
    p.stdout.close()  # what head does after its one byte
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert rc == cli.EXIT_BROKEN_PIPE


def test_help_documents_the_thread_default():
    text = cli.build_parser()._subparsers._group_actions[0].choices["generate"].format_help()
    assert "--threads" in text and "busy" in text


def test_default_threads(monkeypatch):
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(cli.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert cli.default_threads() == 4
    monkeypatch.setattr(cli.os, "getloadavg", lambda: (5.6, 0.0, 0.0))  # 2.4 cores free
    assert cli.default_threads() == 2
    monkeypatch.setattr(cli.os, "getloadavg", lambda: (7.8, 0.0, 0.0))
    assert cli.default_threads() == 1
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(cli.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert cli.default_threads() == 1
