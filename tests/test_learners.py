"""--exercises TRACK: the functions a learner wrote, judged, then in the project's place in train.py, generate.py,
talk.py and lab.py (engineering/learners.py). The learner's files are written here into a scratch folder, each
filled with the project's own body (or a body made wrong on purpose), as a learner who got them right would have."""

import argparse
import importlib
import inspect
import sys
import textwrap

import numpy as np
import pytest

from conftest import run_main, tiny_args
import lab
import train
import transformer
from engineering import checkpoint, judge, learners, parallel, prompting
from transformer import Sampling

EVERY = [dotted for exercise in judge.EXERCISES.values() for dotted in exercise.functions]
NAMES = {dotted.rsplit(".", 1)[1] for dotted in EVERY}  # "step" for "transformer.Adam.step"


def project_function(dotted):
    """The project's function "module.function" or "module.Class.method"."""
    value = importlib.import_module(dotted.split(".")[0])
    for name in dotted.split(".")[1:]:
        value = getattr(value, name)
    return value


def filled(dotted, edit=None):
    """(the source of the project's function, dedented, a method inside its class, with edit(source) applied; the
    names it reads from its module, {name: module}), as a learner's file holds it and imports them."""
    function = project_function(dotted)
    source = textwrap.dedent(inspect.getsource(function))
    if edit:
        source = edit(source)
    module, *owner, _ = dotted.split(".")
    if owner:
        source = f"class {owner[0]}:\n" + textwrap.indent(source, "    ")
    return source, {name: module for name in names_read(function.__code__) if name in function.__globals__}


def names_read(code):
    """Every global name a code object and those nested in it (generator expressions) may read."""
    found = set(code.co_names)
    for constant in code.co_consts:
        if inspect.iscode(constant):
            found |= names_read(constant)
    return found


def write_exercises(folder, names=tuple(judge.EXERCISES), edits=None):
    """folder/NN_NAME.py for each exercise of names, every function filled with the project's body (edits: {"module.
    function": a change to its source}), what they read of the project imported at the top; folder, made with its
    parents, as exercises/derive/ is laid out."""
    folder.mkdir(parents=True, exist_ok=True)
    for exercise in names:
        functions = judge.EXERCISES[exercise].functions
        sources, imported = zip(*(filled(dotted, (edits or {}).get(dotted)) for dotted in functions))
        defined = {dotted.split(".")[1] for dotted in functions}
        imports = {name: module for reads in imported for name, module in reads.items() if name not in defined}
        lines = [f"from {module} import {', '.join(sorted(n for n, m in imports.items() if m == module))}"
                 for module in sorted(set(imports.values()))]
        judge.exercise_file(folder, exercise).write_text("\n".join(lines) + "\n\n\n" + "\n\n".join(sources),
                                                         encoding="utf-8")
    return folder


def bindings():
    """{(module, name): value} of every function and class in the project's modules loaded now, and the methods
    the learner may replace: what a run with --exercises must leave as it found it."""
    found = {}
    for module in learners.project_modules():
        for name, value in vars(module).items():
            if callable(value):
                found[module.__name__, name] = value
                if inspect.isclass(value):
                    found.update({(module.__name__, f"{name}.{key}"): member for key, member in vars(value).items()})
    return found


def changed_since(before):
    """The bindings of before (bindings()) that are not as they were: none, once a run has put everything back."""
    now = bindings()
    return [key for key, value in before.items() if now.get(key) is not value]


def approved(monkeypatch, judged):
    """The judge replaced by one that passes every exercise and records its name in judged: the judge's own
    verdicts are tests/test_exercises.py's; here, what the scripts do with the functions it passes."""
    def passes(name, folder, track):
        judged.append(name)
        return 0
    monkeypatch.setattr(judge, "judge_exercise", passes)


class Ran:
    """The names of the learner's functions (NAMES) in the files of a folder that ran, recorded with sys.setprofile."""

    def __init__(self, folder):
        self.folder, self.calls = str(folder), set()

    def __enter__(self):
        def record(frame, event, arg):
            if event == "call" and frame.f_code.co_name in NAMES and frame.f_code.co_filename.startswith(self.folder):
                self.calls.add(frame.f_code.co_name)
        sys.setprofile(record)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)


def params_of(home, name):
    return checkpoint.load(home / "runs" / name).params


# --- which functions are the learner's --------------------------------------------------------------------------

def test_a_function_is_the_learners_once_its_body_is_more_than_the_stubs_raise(tmp_path):
    (tmp_path / "03_layernorm.py").write_text(
        'def layernorm_forward(x, gain, shift, eps):\n    """the stub\'s docstring"""\n'
        "    raise NotImplementedError\n\n"
        "def layernorm_backward(dout, cache):\n    xhat, rstd, gain = cache\n    raise NotImplementedError\n")
    (tmp_path / "04_softmax.py").write_text('def softmax(x):\n    raise NotImplementedError("yours")\n')
    (tmp_path / "13_adamw.py").write_text("class Adam:\n    def step(self, params, grads, lr):\n        self.t += 1\n")
    found = learners.read_exercises(tmp_path)
    assert found == [learners.Attempt("layernorm", tmp_path / "03_layernorm.py", ("transformer.layernorm_backward",),
                                      ("transformer.layernorm_forward",)),
                     learners.Attempt("adamw", tmp_path / "13_adamw.py", ("transformer.Adam.step",), ())]


def test_each_written_function_is_the_learners_under_every_name_the_project_and_the_learner_call_it_by(tmp_path,
                                                                                                      monkeypatch):
    folder = write_exercises(tmp_path / "derive", ["layernorm", "block", "model", "adamw"])
    approved(monkeypatch, [])
    args = argparse.Namespace(exercises="derive", exercises_dir=str(folder), even_if_wrong=False)
    with learners.in_place(args):
        assert transformer.layernorm_forward.__code__.co_filename == str(folder / "03_layernorm.py")
        # the learner's block imported layernorm_forward from transformer: their own, once written
        assert transformer.block_forward.__globals__["layernorm_forward"] is transformer.layernorm_forward
        assert train.loss_and_grads.__code__.co_filename == str(folder / "10_model.py")  # train.py imported it by name
        assert lab.forward is transformer.forward and lab.layernorm_forward is transformer.layernorm_forward
        assert transformer.Adam.step.__code__.co_filename == str(folder / "13_adamw.py")
        assert train.Adam is transformer.Adam  # one class, whose method is the learner's
    assert transformer.layernorm_forward.__code__.co_filename == transformer.__file__
    assert transformer.Adam.step.__code__.co_filename == transformer.__file__


# --- train.py --exercises ---------------------------------------------------------------------------------------

def test_training_the_learners_gpt_ends_where_the_projects_run_ends_and_runs_their_functions(tmp_path, corpus,
                                                                                             monkeypatch):
    folder = write_exercises(tmp_path / "exercises" / "derive")
    judged, real = [], judge.judge_exercise  # the real judge, its verdicts recorded: each must pass
    monkeypatch.setattr(judge, "judge_exercise", lambda *asked: judged.append((asked[0], real(*asked))) or 0)
    before = bindings()
    plain = run_main("train.py", *tiny_args(tmp_path / "plain", corpus), "--name", "plain")
    assert plain.returncode == 0, plain.stderr
    with Ran(folder) as ran:
        yours = run_main("train.py", *tiny_args(tmp_path / "yours", corpus), "--name", "yours",
                         "--exercises", "derive", "--exercises-dir", folder)
    assert yours.returncode == 0, yours.stderr
    assert judged == [(name, 0) for name in judge.EXERCISES]  # each judged right, before any step
    assert ran.calls == NAMES  # every one of them ran, the BPE's too
    assert f"({len(EVERY)} of {len(EVERY)})" in yours.stderr and "still the project's: none" in yours.stderr
    expected, got = params_of(tmp_path / "plain", "plain"), params_of(tmp_path / "yours", "yours")
    for name in expected:  # the same operations in the same order: the same float32 numbers
        assert np.array_equal(got[name], expected[name]), name
    assert not changed_since(before)  # every module as it was


def flipped_layernorm_backward(source):
    assert "    dx *= rstd\n" in source
    return source.replace("    dx *= rstd\n", "    dx *= -rstd\n")


def test_a_wrong_backward_is_named_before_training_and_the_run_does_not_start(tmp_path, corpus):
    folder = write_exercises(tmp_path / "derive", ["layernorm"],
                             {"transformer.layernorm_backward": flipped_layernorm_backward})
    before = bindings()
    result = run_main("train.py", *tiny_args(tmp_path / "home", corpus), "--exercises", "derive",
                      "--exercises-dir", folder)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: exercises/judge.py does not pass your layernorm (wrong: python exercises/judge.py layernorm --track "
        f"derive --exercises-dir {folder}). Fix it, or add --even-if-wrong to use it all the same"]
    assert not (tmp_path / "home").exists()  # no run was started
    assert not changed_since(before)


def test_even_if_wrong_trains_with_the_wrong_backward_and_says_it_is_wrong(tmp_path, corpus):
    folder = write_exercises(tmp_path / "derive", ["layernorm"],
                             {"transformer.layernorm_backward": flipped_layernorm_backward})
    with Ran(folder) as ran:
        result = run_main("train.py", *tiny_args(tmp_path / "home", corpus), "--exercises", "derive",
                          "--exercises-dir", folder, "--even-if-wrong", "--name", "wrong")
    assert result.returncode == 0, result.stderr
    assert "warning: exercises/judge.py does not pass your layernorm (wrong: " in result.stderr
    assert "yours, from " in result.stderr and "(2 of " in result.stderr
    assert ran.calls == {"layernorm_forward", "layernorm_backward"}
    assert (tmp_path / "home" / "runs" / "wrong" / "model.npz").is_file()


def test_a_folder_with_nothing_written_leaves_every_function_the_projects(tmp_path, corpus):
    (tmp_path / "derive").mkdir()
    result = run_main("train.py", *tiny_args(tmp_path / "home", corpus, epochs=1), "--exercises", "derive",
                      "--exercises-dir", tmp_path / "derive")
    assert result.returncode == 0, result.stderr
    assert f"holds none of your functions yet (each stub still raises NotImplementedError): all {len(EVERY)} are " \
           f"the project's" in result.stderr


@pytest.mark.parametrize("processes", ["2", "0"])  # asked for two processes; threads, where they would pay
def test_a_run_with_the_learners_functions_keeps_to_their_thread(tmp_path, corpus, monkeypatch, processes):
    monkeypatch.setattr(parallel, "threads_for", lambda *args, **kwargs: 2)  # as for a larger model: threads would pay
    folder = write_exercises(tmp_path / "derive", ["linear"])  # judged by the judge itself
    with Ran(folder) as ran:
        result = run_main("train.py", *tiny_args(tmp_path / "home", corpus, epochs=1), "--processes", processes,
                          "--exercises", "derive", "--exercises-dir", folder, "--name", "one")
    assert result.returncode == 0, result.stderr
    said = "--exercises: one process, this one, where your functions are (not --processes 2)"
    assert (said in result.stderr) == (processes == "2")  # 0 was not asked for in so many words: said nothing
    model = checkpoint.load(tmp_path / "home" / "runs" / "one")
    assert (model.meta["settings"]["processes"], model.meta["slices"]) == (1, 1)
    assert ran.calls == {"linear_forward", "linear_backward"}


@pytest.mark.parametrize("args, said", [
    (["--exercises-dir", "somewhere"], "--exercises-dir and --even-if-wrong go with --exercises TRACK"),
    (["--exercises", "derive", "--exercises-dir", "no/such/folder"], "--exercises-dir no/such/folder: there is no "
                                                                        "such folder"),
])
def test_the_exercises_options_are_checked_before_any_work(tmp_path, corpus, args, said):
    result = run_main("train.py", *tiny_args(tmp_path / "home", corpus), *args)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert said in result.stderr
    assert not (tmp_path / "home").exists()


# --- generate.py, talk.py and lab.py --exercises ----------------------------------------------------------------

@pytest.mark.parametrize("script, args, stdin", [("generate.py", ["the cat"], ""), ("talk.py", [], "the cat\n")])
def test_generation_runs_the_learners_forward_and_writes_what_the_projects_writes(tmp_path, tiny_checkpoint,
                                                                                  monkeypatch, script, args, stdin):
    folder = write_exercises(tmp_path / "derive", ["model"])
    approved(monkeypatch, [])
    before = bindings()
    common = [*args, "--checkpoint", tiny_checkpoint, "--temperature", "0", "--full", "--max_new_tokens", "12"]
    plain = run_main(script, *common, stdin=stdin)
    with Ran(folder) as ran:
        yours = run_main(script, *common, "--exercises", "derive", "--exercises-dir", folder, stdin=stdin)
    assert plain.returncode == yours.returncode == 0, yours.stderr
    assert ran.calls == {"forward"}  # through the whole window at each token: the key/value cache is the project's
    assert yours.stdout == plain.stdout  # greedy: the same tokens, from the same numbers
    assert not changed_since(before)


def test_the_lab_looks_inside_a_model_computed_by_the_learners_functions(tmp_path, tiny_checkpoint, monkeypatch):
    folder = write_exercises(tmp_path / "derive", ["block"])
    approved(monkeypatch, [])
    args = lab.command_line(["--checkpoint", str(tiny_checkpoint), "--exercises", "derive", "--exercises-dir",
                             str(folder)])
    args.window = 0
    model = prompting.load_for_sampling(args, str(tiny_checkpoint), decoding=False)
    plain = lab.look(model, "the cat sat", Sampling(1.0, 0, 1.0))
    with learners.in_place(args), Ran(folder) as ran:
        yours = lab.look(model, "the cat sat", Sampling(1.0, 0, 1.0))
    assert ran.calls == {"block_forward"}  # in forward (the attention maps) and in the logit lens
    assert yours["attention"] == plain["attention"]
