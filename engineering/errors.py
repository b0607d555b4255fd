"""The one exception type for a person's bad input, kept apart from bugs, and how a script says it.

A setting that cannot work, a corpus that is missing or not text, a tokenizer file or checkpoint
that is broken or foreign, a prompt with nothing the model knows: the project raises InputError,
whose message says what is wrong and what to do, and the scripts turn it into one line on stderr
and exit status 2 (run_script). Every other exception, NumPy's shape and broadcast errors
included, is a bug in the code and keeps its traceback, so a learner who edits the model sees the
line that broke.
"""

import errno
import os
import sys


class InputError(ValueError):
    """Bad input from a person: the message names it and says what to do."""


# What an error of the system means, in a person's words, and what to do about it.
SAID = {errno.ENOSPC: ("the disk is full", "free some space"),
        errno.EDQUOT: ("the disk quota is used up", "free some space"),
        errno.EROFS: ("the file system is read-only", "use a folder that can be written"),
        errno.EACCES: ("permission is denied", "check the folder's permissions, or use another folder"),
        errno.EPERM: ("permission is denied", "check the folder's permissions, or use another folder"),
        errno.ENAMETOOLONG: ("the name is too long for the file system", "give a shorter name")}


def os_reason(err):
    """What an OSError means, in words.

    Example: os_reason(OSError(28, "No space left on device")) -> "the disk is full"
    """
    return SAID[err.errno][0] if err.errno in SAID else (err.strerror or str(err))


def os_remedy(err):
    """What to do about an OSError. Example: os_remedy(OSError(28, "No space left on device")) -> "free some space" """
    return SAID[err.errno][1] if err.errno in SAID else "check the file and its folder"


def os_error_line(err):
    """An OSError that no code of the project said better, as one line: what is wrong, the file (its name shortened),
    and what to do.

    Example: os_error_line(OSError(28, "No space left on device", "/ck/x")) -> "the disk is full at /ck/x: free some
    space, and try again"
    """
    named = f" at {shortened(str(err.filename), 120)}" if err.filename else ""
    return f"{os_reason(err)}{named}: {os_remedy(err)}, and try again"


def shortened(text, most=60):
    """text as a message quotes it: whole where it is at most `most` characters, else its start and end with its
    length, so that a name of 300 characters does not fill the line.

    Example: shortened("a" * 300, 20) -> "aaaaaaaaaa...aaaaaa (300 characters)"
    """
    if len(text) <= most:
        return text
    return f"{text[:most // 2]}...{text[-(most - most // 2 - 4):]} ({len(text):,} characters)"


def run_script(main):
    """Run a script's main(); bad input from a person becomes one line on stderr and exit status 2, and
    Ctrl-C where the script does not handle it one line and exit status 130.

    Bad input is the project's InputError (settings, corpus, tokenizer, checkpoint, prompt), or an
    OSError, which names a file that cannot be read or written (os_error_line). Anything else, NumPy's
    errors included, is a bug: it keeps its traceback and exits with status 1. Output read by a program
    that stops reading (`python generate.py ... | head`) ends quietly, as a Unix tool ends on SIGPIPE.
    """
    try:
        return main()
    except BrokenPipeError:
        end_on_closed_pipe()
    except (InputError, OSError) as err:
        print(f"error: {err if isinstance(err, InputError) else os_error_line(err)}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C); nothing was left half-written", file=sys.stderr)
        raise SystemExit(130) from None


def end_on_closed_pipe():
    """Exit quietly with the status of a Unix tool ended by SIGPIPE (128 + 13), its reader gone: stdout is pointed
    at /dev/null, so that Python's last flush of what is still buffered meets no closed pipe."""
    stdout_to_nowhere()
    raise SystemExit(141)


def stdout_to_nowhere():
    """Point stdout at /dev/null, where the pipe it wrote to has lost its reader: what is left to print goes nowhere."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # 128 + 13, SIGPIPE's number, as a shell reports a tool that SIGPIPE ended
