"""Bad input and bugs apart: a person's mistake is one line and exit status 2, a bug in the code
keeps its traceback and exits with status 1.

A learner who edits transformer.py and gets a shape wrong must see the line that broke, not a
message that reads like a wrong setting. The bugs here are made by patching one function of
transformer.py in a child process, which then runs a script exactly as `python train.py` would.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import config
from errors import InputError

REPO = Path(__file__).resolve().parent.parent

# a learner's slip: the weight used the wrong way round; x @ W.T fails where W is not square
TRANSPOSED_WEIGHT = """
    import transformer
    def linear_forward(x, W, b):
        return x @ W.T + b, (x, W)
    transformer.linear_forward = linear_forward
"""

# a learner's slip in a backward: a matrix product where the chain rule multiplies entry by entry
WRONG_PRODUCT_BACKWARD = """
    import transformer
    def gelu_backward(dout, cache):
        x, tanh_u = cache
        return dout @ (0.5 * (1.0 + tanh_u))
    transformer.gelu_backward = gelu_backward
"""


def run_patched(patch, script, *args, cwd=REPO):
    """Run `python script args` in a child process whose transformer.py has one function replaced."""
    program = textwrap.dedent(patch) + textwrap.dedent(f"""
        import runpy, sys
        sys.argv = [{script!r}, *{list(args)!r}]
        runpy.run_path({str(REPO / script)!r}, run_name="__main__")
    """)
    return subprocess.run([sys.executable, "-c", program], cwd=cwd, capture_output=True, text=True, timeout=120)


def tiny_run(tmp_path):
    return ["--epochs", "1", "--max_rows", "40", "--num_merges", "10", "--max_steps", "3", "--processes", "1",
            "--corpus_path", str(REPO / "data" / "sample.csv"), "--checkpoint", str(tmp_path / "ck")]


@pytest.mark.parametrize("patch, function", [(TRANSPOSED_WEIGHT, "linear_forward"),
                                             (WRONG_PRODUCT_BACKWARD, "gelu_backward")])
def test_a_bug_in_the_model_keeps_its_traceback(tmp_path, patch, function):
    result = run_patched(patch, "train.py", *tiny_run(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert f"in {function}" in result.stderr  # the frame of the broken function is shown
    assert "\nerror: " not in result.stderr  # not dressed as bad input


def test_the_same_run_unpatched_trains(tmp_path):
    result = run_patched("", "train.py", *tiny_run(tmp_path))
    assert result.returncode == 0, result.stderr


def test_a_bug_while_generating_keeps_its_traceback(tiny_checkpoint):
    result = run_patched(TRANSPOSED_WEIGHT, "generate.py", "the cat", "--checkpoint", str(tiny_checkpoint))
    assert result.returncode == 1
    assert "in linear_forward" in result.stderr


@pytest.mark.parametrize("raised, status", [(InputError("no corpus at x.csv"), 2), (config.SettingError("bad"), 2),
                                            (FileNotFoundError(2, "No such file", "x.txt"), 2)])
def test_run_turns_bad_input_into_one_line(capsys, raised, status):
    def main():
        raise raised
    with pytest.raises(SystemExit) as stop:
        config.run(main)
    assert stop.value.code == status
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize("raised", [ValueError("matmul: Input operand 1 has a mismatch"), IndexError("index 9"),
                                    TypeError("unsupported operand")])
def test_run_lets_a_bug_through(raised):
    def main():
        raise raised
    with pytest.raises(type(raised)):
        config.run(main)
