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
from engineering import settings
from engineering.errors import InputError, run_script

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


@pytest.mark.parametrize("raised, status", [(InputError("no corpus at x.csv"), 2), (settings.SettingError("bad"), 2),
                                            (FileNotFoundError(2, "No such file", "x.txt"), 2)])
def test_run_turns_bad_input_into_one_line(capsys, raised, status):
    def main():
        raise raised
    with pytest.raises(SystemExit) as stop:
        run_script(main)
    assert stop.value.code == status
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize("raised", [ValueError("matmul: Input operand 1 has a mismatch"), IndexError("index 9"),
                                    TypeError("unsupported operand")])
def test_run_lets_a_bug_through(raised):
    def main():
        raise raised
    with pytest.raises(type(raised)):
        run_script(main)


# --- the learner's own process ------------------------------------------------------------------

# a learner's breakpoint() in a backward; the hook that PYTHONBREAKPOINT names says in which process it stopped
BREAKPOINT_IN_BACKWARD = """
    import transformer
    plain_linear_backward = transformer.linear_backward
    def linear_backward(dout, cache):
        breakpoint()
        return plain_linear_backward(dout, cache)
    transformer.linear_backward = linear_backward
"""
HOOK = """
import os, sys
def stopped():
    print(f"breakpoint in process {os.getpid()}", file=sys.stderr, flush=True)
    raise SystemExit(7)
"""

# a learner's shape slip in a backward: dx = dout @ W where it is dout @ W.T
SHAPE_BUG_BACKWARD = """
    import transformer
    def linear_backward(dout, cache):
        x, W = cache
        dx = dout @ W
        return dx, x.reshape(-1, W.shape[0]).T @ dout.reshape(-1, W.shape[1]), dout.reshape(-1, W.shape[1]).sum(0)
    transformer.linear_backward = linear_backward
"""


def default_run(tmp_path):
    """A short run with the default settings otherwise: the reference model, on as many processes as by default."""
    return ["--max_steps", "3", "--max_rows", "200", "--checkpoint", str(tmp_path / "ck")]


def test_a_breakpoint_in_a_backward_stops_in_the_persons_own_process(tmp_path):
    (tmp_path / "hook.py").write_text(HOOK)
    program = textwrap.dedent(BREAKPOINT_IN_BACKWARD) + textwrap.dedent(f"""
        import os, runpy, sys
        print(f"train.py in process {{os.getpid()}}", file=sys.stderr, flush=True)
        sys.argv = ["train.py", *{default_run(tmp_path)!r}]
        runpy.run_path({str(REPO / "train.py")!r}, run_name="__main__")
    """)
    env = {**__import__("os").environ, "PYTHONBREAKPOINT": "hook.stopped", "PYTHONPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 7, result.stderr
    started, stopped = (line.split()[-1] for line in result.stderr.splitlines() if " in process " in line)
    assert started == stopped  # the person's process, not a worker without a terminal


def test_a_shape_bug_in_a_backward_ends_its_traceback_at_the_learners_line(tmp_path):
    result = run_patched(SHAPE_BUG_BACKWARD, "train.py", *default_run(tmp_path))
    assert result.returncode == 1, result.stderr
    frames = [line.strip() for line in result.stderr.splitlines() if line.strip().startswith("File ")]
    assert frames[-1].startswith('File "<string>"') and frames[-1].endswith("in linear_backward"), result.stderr
    assert "parallel.py" not in result.stderr and "worker" not in result.stderr  # not a worker's report


# --- Ctrl-C at any moment -------------------------------------------------------------------------

def interrupted(args, after, tmp_path, delay=0.3):
    """(exit status, stdout, stderr) of `python args` sent Ctrl-C (SIGINT) once a line of stdout starts with after."""
    import os
    import signal
    import time
    process = subprocess.Popen([sys.executable, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out = ""
    while not out.splitlines() or not any(line.startswith(after) for line in out.splitlines()):
        char = process.stdout.read(1)
        assert char, (out, process.stderr.read())
        out += char
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    rest, err = process.communicate(timeout=60)
    return process.returncode, out + rest, err


def test_ctrl_c_while_generating_is_one_line_and_exit_130(tiny_checkpoint, tmp_path):
    status, out, err = interrupted(["generate.py", "the", "--full", "--max_new_tokens", "100000",
                                    "--checkpoint", str(tiny_checkpoint)], "the", tmp_path)
    assert status == 130 and "Traceback" not in err, err
    assert err.strip().splitlines() == ["interrupted (Ctrl-C); nothing was left half-written"], err
    assert out.endswith("\n")  # the continuation's line is ended


def test_ctrl_c_while_the_corpus_is_read_or_the_tokenizer_learned_is_one_line_and_exit_130(tmp_path):
    status, out, err = interrupted(["train.py", "--checkpoint", str(tmp_path / "ck"), "--max_rows", "0",
                                    "--num_merges", "2000"], "corpus:", tmp_path, delay=0.5)
    assert "model:" not in out, "the tokenizer was learned before Ctrl-C: give it more to learn"
    assert status == 130 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
    assert not (tmp_path / "ck").exists()  # nothing half-written: nothing written at all
