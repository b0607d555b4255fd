"""The learner's own functions in place of the project's: `--exercises TRACK` of train.py, generate.py, talk.py and
lab.py, so that a learner trains, talks to and looks inside the GPT they wrote.

An exercise NAME (judge.EXERCISES, in order) is a file, exercises/guided/NN_NAME.py on the guided track or
exercises/derive/NN_NAME.py on the derive track (judge.exercise_file), of stubs with the project's names
("transformer.layernorm_forward" is `def layernorm_forward` there, "transformer.Adam.step" is `step` of a
`class Adam`). A function whose body is no longer only `raise NotImplementedError` is the learner's; that is read from
the file's syntax tree, so nothing runs to find out. A file that is not there, or a stub not written, leaves the
project's function in place.

Before anything runs, every exercise with a function of the learner's is judged by judge.judge_exercise, quietly;
one not passed stops the script with one line that names it and the command that shows why (InputError), unless
--even-if-wrong asks to go on, which is said. Then, for the with-block of in_place, each of the learner's functions
takes the project's place in this process:
    - in its own module, transformer or tokenizer (transformer.layernorm_forward, transformer.Adam.step), so the
      project's functions that call it, transformer.forward calling layernorm_forward, call the learner's;
    - in every module of the project that imported it by name (train.py's `from transformer import forward`), the
      script being run (__main__) included;
    - in the learner's own files, so that a block_forward of theirs that imported layernorm_forward from transformer
      calls their own layernorm_forward where that is written too.
Two of the project's functions that would go round the learner's are replaced too, while they are: where the learner
wrote forward, generation's forward_cached becomes their forward over the whole window at each token (no key/value
cache), and where they wrote the BPE, the tokenizer is learned by train_plain, which calls merge_pair, not by the fast
trainer. After the with-block every name is bound as it was before.
"""

import ast
import contextlib
import io
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

import tokenizer as bpe
from engineering import judge
from engineering.errors import InputError
from engineering.settings import replaced

REPO = Path(__file__).resolve().parent.parent
PACKAGE = Path(__file__).resolve().parent
WIDE_OPEN = "--even-if-wrong"  # the option that uses the learner's functions even where the judge does not pass them


def add_options(parser):
    """--exercises TRACK, --exercises-dir DIR and --even-if-wrong, on a script's command line."""
    group = parser.add_argument_group("your own functions (docs/exercises.md)")
    group.add_argument("--exercises", choices=list(judge.TRACKS), metavar="TRACK",
                       help=f"{' or '.join(judge.TRACKS)}: every function you have written in "
                            f"exercises/guided/NN_NAME.py (guided) or exercises/derive/NN_NAME.py (derive) takes the "
                            f"place of the project's, once exercises/judge.py judges it right; the run says which "
                            f"are yours")
    group.add_argument("--exercises-dir", metavar="DIR",
                       help="with --exercises: read your files from DIR/NN_NAME.py instead of the track's folder (a "
                            "copy of them, say), as exercises/judge.py --exercises-dir does")
    group.add_argument(WIDE_OPEN, action="store_true",
                       help="with --exercises: use your functions even where exercises/judge.py does not pass one, to "
                            "see what a wrong backward does to learning; the run says which one is wrong")


class Attempt(NamedTuple):
    """One exercise of the learner's: its name, its file, and the project's functions it holds ("module.function"),
    those written and those still stubs (or missing)."""
    name: str
    path: Path
    written: tuple
    unwritten: tuple


# --- what the learner has written: read from the files' syntax trees --------------------------------------------

def definition(tree, path):
    """The def at the path of names ["Adam", "step"] (a class, then its method) in the module's tree, or None."""
    nodes = tree.body
    for depth, name in enumerate(path):
        kind = ast.ClassDef if depth < len(path) - 1 else (ast.FunctionDef, ast.AsyncFunctionDef)
        found = [node for node in nodes if isinstance(node, kind) and node.name == name]
        if not found:
            return None
        nodes = found[-1].body  # the last definition is the one the module keeps
    return found[-1]


def read_exercises(folder):
    """The exercises in folder with at least one function of the learner's, in the order of judge.EXERCISES, as
    Attempt; a stub is told by the judge's rule (judge.is_stub)."""
    found = []
    for name, exercise in judge.EXERCISES.items():
        path = judge.exercise_file(folder, name)
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))  # a SyntaxError names its line
        defs = {dotted: definition(tree, dotted.split(".")[1:]) for dotted in exercise.functions}
        written = tuple(dotted for dotted, node in defs.items() if node is not None and not judge.is_stub(node))
        if written:
            unwritten = tuple(dotted for dotted in exercise.functions if dotted not in written)
            found.append(Attempt(name, path, written, unwritten))
    return found


def short(dotted):
    """A function's name as the learner wrote it. Example: "transformer.Adam.step" -> "Adam.step" """
    return dotted.split(".", 1)[1]


# --- the judge ----------------------------------------------------------------------------------------------

def problem(exercise, folder, track):
    """What keeps the judge from passing one exercise of the learner's, or None where it passes it: judged quietly,
    its table and lines kept from the screen."""
    if exercise.unwritten:
        return f"{', '.join(map(short, exercise.unwritten))} not written yet"
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        status = judge.judge_exercise(exercise.name, folder, track)
    if status == 0:
        return None
    return "wrong" if status == 1 else said.getvalue().strip().splitlines()[-1]


def judge_command(name, track, folder, default_folder):
    """The command that judges one exercise, as the learner types it."""
    where = "" if folder == default_folder else f" --exercises-dir {folder}"
    return f"python exercises/judge.py {name} --track {track}{where}"


def not_passed(problems, track, folder, default_folder):
    """{exercise: its problem} said in one line: each exercise, what is wrong, and the command that shows why."""
    said = [f"{name} ({what}: {judge_command(name, track, folder, default_folder)})" for name, what in problems.items()]
    return f"exercises/judge.py does not pass your {'; '.join(said)}"


# --- the learner's functions, loaded ------------------------------------------------------------------------

def learners_functions(exercises):
    """({"module.function": the learner's function}, the learner's modules), every file run once by
    judge.learners_module: a module of its own, not in sys.modules, a mistake in it keeping its traceback."""
    functions, modules = {}, []
    for exercise in exercises:
        module = judge.learners_module(exercise.path)
        modules.append(module)
        for dotted in exercise.written:
            value = module
            for name in dotted.split(".")[1:]:
                value = getattr(value, name)
            functions[dotted] = value
    return functions, modules


def uncached(forward):
    """generate's forward_cached through the learner's forward, with no key/value cache: `past` is the ids read so far,
    and each call reads them all again through forward, so that generation runs the learner's forward."""
    def forward_cached(params, ids, cfg, past=None):  # (T,) ints -> logits of the last position (V,), the ids read
        read = [*(past or []), *ids]
        logits, _ = forward(params, np.array(read), cfg)  # (T, V)
        return logits[-1], read
    return forward_cached


def plain_trainer(texts, num_merges):
    """BPETokenizer.train by the plain BPE, tokenizer.train_plain (which calls merge_pair), whichever of the two is the
    learner's: the same merges as the fast trainer's, found by recounting every pair at each merge."""
    return bpe.BPETokenizer(*bpe.train_plain(texts, num_merges))


# --- putting them in place ----------------------------------------------------------------------------------

def project_modules():
    """The project's modules loaded in this process: the top level's, the script run (__main__) among them, and the
    package's."""
    found = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py") and Path(file).resolve().parent in (REPO, PACKAGE):
            found.append(module)
    return found


def replacements(functions):
    """{"module.function": the function in its place}: the learner's, and the stand-ins for the two that would go
    round them (uncached, plain_trainer)."""
    replacing = dict(functions)
    if "transformer.forward" in functions:
        replacing["transformer.forward_cached"] = uncached(functions["transformer.forward"])
    if any(dotted.startswith("tokenizer.") for dotted in functions):
        replacing["tokenizer.BPETokenizer.train"] = staticmethod(plain_trainer)
    return replacing


# the replacements in place now, while swapped's with-block runs: kept_in_this_process asks
IN_PLACE = []


@contextlib.contextmanager
def swapped(replacing, learner_modules):
    """For the with-block, each function of replacing {"module.function": function} in the project's place: a method
    on its class; a function in its module (judge.MODULES) and wherever a module of the project or of the learner
    holds it under a name. Every name is bound back as it was at the end."""
    undo, by_identity = [], {}
    for dotted, function in replacing.items():
        module_name, *owner, name = dotted.split(".")
        module = judge.MODULES[module_name]
        if owner:
            holder = getattr(module, owner[0])
            undo.append((holder, name, vars(holder)[name]))
            setattr(holder, name, function)
        else:
            by_identity[id(getattr(module, name))] = (getattr(module, name), function)
    for module in project_modules() + learner_modules:
        for name, value in list(vars(module).items()):
            original, function = by_identity.get(id(value), (None, None))
            if original is value:
                undo.append((module, name, value))
                setattr(module, name, function)
    IN_PLACE.append(replacing)
    try:
        yield
    finally:
        IN_PLACE.pop()
        for holder, name, value in reversed(undo):
            setattr(holder, name, value)


def kept_in_this_process(settings):
    """The settings, with processes = 1 (this thread alone) while the learner's functions are in place: processes of
    a training run's own would start afresh with the project's functions, and a function of the learner's need not
    be safe to run in two threads at once (a cache kept in a global from the forward to the backward would be
    overwritten by the other slice's, and the gradients wrong without a word)."""
    if not IN_PLACE or settings.processes == 1:
        return settings
    if settings.processes > 1:  # asked for: said why not
        print(f"--exercises: one process, this one, where your functions are (not --processes {settings.processes})",
              file=sys.stderr)
    return replaced(settings, {"processes": 1})


# --- the interface: what a script calls ---------------------------------------------------------------------

def said_in_place(functions, folder):
    """The two lines that say which functions are the learner's and which are still the project's."""
    every = [dotted for exercise in judge.EXERCISES.values() for dotted in exercise.functions]
    theirs = [short(dotted) for dotted in every if dotted not in functions]
    if not functions:
        return f"{folder}/ holds none of your functions yet (each stub still raises NotImplementedError): all " \
               f"{len(every)} are the project's"
    notes = ""
    if "transformer.forward" in functions:
        notes += "; generation reads each token's whole window through your forward"
    if any(dotted.startswith("tokenizer.") for dotted in functions):
        notes += "; the tokenizer is learned by the plain BPE"
    return (f"yours, from {folder}/ ({len(functions)} of {len(every)}): {', '.join(map(short, functions))}"
            f"{notes}\nstill the project's: {', '.join(theirs) or 'none'}")


@contextlib.contextmanager
def in_place(args):
    """For the with-block, the learner's functions in place of the project's, as args (add_options) ask, once the
    judge passes them; nothing without --exercises. InputError where one does not pass, unless --even-if-wrong."""
    if args.exercises is None:
        if args.exercises_dir is not None or args.even_if_wrong:
            raise InputError(f"--exercises-dir and {WIDE_OPEN} go with --exercises TRACK "
                             f"({' or '.join(judge.TRACKS)}): give it, or leave them out")
        yield
        return
    track, default_folder = args.exercises, judge.TRACKS[args.exercises]
    folder = default_folder if args.exercises_dir is None else Path(args.exercises_dir)
    if not folder.is_dir():
        raise InputError(f"--exercises-dir {folder}: there is no such folder; give the folder of your NN_NAME.py "
                         f"files")
    exercises = read_exercises(folder)
    problems = {exercise.name: what for exercise in exercises
                if (what := problem(exercise, folder, track)) is not None}
    if problems and not args.even_if_wrong:
        raise InputError(f"{not_passed(problems, track, folder, default_folder)}. Fix "
                         f"{'it' if len(problems) == 1 else 'them'}, or add {WIDE_OPEN} to use "
                         f"{'it' if len(problems) == 1 else 'them'} all the same")
    functions, learner_modules = learners_functions(exercises)
    print(said_in_place(functions, as_the_learner_knows(folder)), file=sys.stderr)
    if problems:
        print(f"warning: {not_passed(problems, track, folder, default_folder)}; in use all the same, as {WIDE_OPEN} "
              f"asks", file=sys.stderr)
    with swapped(replacements(functions), learner_modules):
        yield


def as_the_learner_knows(folder):
    """A folder as the learner knows it: relative to the repository where it lies inside it."""
    folder = folder.resolve()
    return folder.relative_to(REPO).as_posix() if folder.is_relative_to(REPO) else str(folder)
