"""What each attention head of a trained model reads, over its held-out text: the lab's attention maps (a look, asked
of `python lab.py` serving the model), averaged. Run by hand:

    python benchmarks/bench_heads.py --checkpoint tragedies [--windows 80]

The held-out text is the end of the run's corpus that training never saw (its last val_fraction, as train.py splits
it). It is cut into windows of the tokens the model reads, every third window taken, and at each position t from 2
on, each head's weight is averaged on: the previous token (t - 1), the token itself (t), the first token of the
window, and the last token before t - 1 that holds a line break, the one the current line starts after (where there
is one). Beside them, what a head reading every position alike would give each: 1 / (t + 1) on average.
"""

import argparse
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import config  # noqa: E402
from bench_lab import lab_serving, post  # noqa: E402
from engineering import prompting  # noqa: E402
from engineering.corpus import read_corpus  # noqa: E402

READS = ("the previous token", "itself", "the line's break", "the first token", "every position alike")


def weights_read(look):
    """{what: [the weight each head gives it, at each position]} for one look: lists of (layer, head, weight)."""
    texts = [token["text"] for token in look["tokens"]]
    maps = np.array(look["attention"])  # (L, nh, T, T)
    found = {what: [] for what in READS}
    for t in range(2, len(texts)):
        breaks = [s for s in range(t - 1) if "\n" in texts[s]]
        row = maps[:, :, t]  # (L, nh, T): what position t reads, in every head
        found["the previous token"].append(row[..., t - 1])
        found["itself"].append(row[..., t])
        found["the first token"].append(row[..., 0])
        found["every position alike"].append(np.full(row.shape[:2], 1 / (t + 1)))
        if breaks:
            found["the line's break"].append(row[..., breaks[-1]])
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="a run's name or folder, as talk.py takes it")
    p.add_argument("--windows", type=int, default=80, help="windows of held-out text to average over")
    args = p.parse_args()
    asked = types.SimpleNamespace(checkpoint=args.checkpoint, window=0)
    model = prompting.load_for_sampling(asked, config.checkpoint)
    s = types.SimpleNamespace(**{**vars(config), **model.meta["settings"]})
    corpus = read_corpus(Path(model.meta["corpus"]["path"]), s.corpus_column, s.max_rows, s.val_fraction, s.seed)
    ids, window = model.tokenizer.encode(corpus.val_text), asked.window
    totals, looked = {what: [] for what in READS}, 0
    with lab_serving(model.folder) as address:
        for start in range(0, len(ids) - window, 3 * window)[:args.windows]:
            chunk = ids[start:start + window]
            look = post(address + "api/look", {"text": model.tokenizer.decode(chunk), "temperature": 1.0, "top_k": 0,
                                               "top_p": 1.0})
            if [token["id"] for token in look["tokens"]] != chunk:
                continue  # decoded and encoded again, the window would be other tokens: skipped
            looked += 1
            for what, weights in weights_read(look).items():
                totals[what] += weights
    print(f"{model.folder.name}: {looked} windows of {window} tokens of the held-out text of {corpus.path}")
    print("mean attention weight on:".ljust(22) + "".join(f"{what:>22}" for what in READS))
    means = {what: np.mean(totals[what], axis=0) for what in READS}  # (L, nh) each
    for layer in range(model.cfg.num_layers):
        for head in range(model.cfg.num_heads):
            shares = "".join(f"{means[what][layer, head]:22.3f}" for what in READS)
            print(f"block {layer}, head {head}".ljust(22) + shares)


if __name__ == "__main__":
    main()
