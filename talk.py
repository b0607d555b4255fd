"""Talk to a trained model: type the start of a text and watch the model continue it.

    python talk.py [--checkpoint NAME] [--list] [< prompts.txt]  # the latest finished run, or the run NAME

Each line is a prompt, continued until the reply ends as the model learned (engineering/prompting.py); /help.
"""

import contextlib
import dataclasses
import sys
from pathlib import Path

import numpy as np

import config
from engineering import checkpoint, learners, prompting, runs
from engineering.errors import InputError, run_script
from engineering.settings import check_seed
from engineering.prompting import REPLY_ENDS_SAID, continue_prompt, warn
from engineering.wording import plural


SETTERS = {  # command: (the setting it changes, its argument, what it does)
    "/temp": ("temperature", "X", "temperature: 0 always takes the most likely token, higher is more surprising"),
    "/topk": ("top_k", "N", "keep only the N most likely tokens; 0 turns this off"),
    "/topp": ("top_p", "P", "keep the most likely tokens until they reach probability P, in (0, 1]; 1 is off"),
    "/len": ("max_new_tokens", "N", "the most tokens one continuation may have, 1 or more"),
    "/seed": ("seed", "N", "restart the random draws from seed N (0 to 2**64 - 1), to repeat a session"),
}


def set_value(session, name, text):
    """Set one setting from the text typed after its command; InputError, changing nothing, where it cannot be."""
    try:
        value = int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        raise InputError(f"{text!r} is not a number") from None
    if name in ("temperature", "top_k", "top_p"):
        session.sampling = prompting.sampling(**{**dataclasses.asdict(session.sampling), name: value})  # its rules
    elif name == "seed":
        check_seed(value)
        session.seed, session.rng = value, np.random.default_rng(value)  # the draws start anew, to repeat a session
    elif not (isinstance(value, int) and value >= 1):
        raise InputError(f"{name} must be a whole number, 1 or more, got {text}")
    else:
        setattr(session, name, value)


def settings_line(session):
    sampling, off = session.sampling, {True: " (off)", False: ""}
    return (f"temperature {sampling.temperature}, top_k {sampling.top_k}{off[sampling.top_k == 0]}, "
            f"top_p {sampling.top_p}{off[sampling.top_p == 1]}, "
            f"up to {plural(session.max_new_tokens, 'new token')}, seed {session.seed}, "
            f"window {plural(session.window, 'token')}")


HELP = """Type some text and press Enter: the model continues it a token at a time, until it reaches {end}
({why}), or has written /len tokens; started with --full, it always writes /len tokens. The last tokens
of what you type are drawn again as tokens that start with the same text, so a speaker's name ends its
line as in the text the model learned, and the model may add to your last word ('The baker' -> 'The bakery');
started with --exact, your tokens are continued as they are. Characters it has never seen are left out
(refused with --strict). Ctrl-C stops a continuation; Ctrl-D or /quit leaves. The commands:"""


def help_text(session):
    end, why = REPLY_ENDS_SAID[checkpoint.corpus_kind(session.model.meta)]
    commands = [(f"{command} {arg}", what) for command, (_, arg, what) in SETTERS.items()]
    commands += [(command, what) for command, (_, what) in REPORTS.items()] + [("/quit", "leave")]
    return "\n".join([HELP.format(end=end, why=why), *(f"  {command:<10} {what}" for command, what in commands)])


REPORTS = {"/settings": (settings_line, "show the settings now"),  # command: (what it prints, what it does)
         "/models": (lambda session: runs.runs_table(session.home), "list the runs, as talk.py --list does"),
         "/help": (help_text, "this text")}


def run_command(session, line):
    """Carry out a line starting with /; False when it is /quit."""
    command, *values = line.split()
    if command == "/quit":
        return False
    try:
        if command in REPORTS:
            print(REPORTS[command][0](session))
        elif command not in SETTERS:
            warn(f"unknown command {command}; the commands are {', '.join([*SETTERS, *REPORTS, '/quit'])}")
        elif len(values) != 1:
            raise InputError(f"{command} takes one value")
        else:
            set_value(session, SETTERS[command][0], values[0])
            print(settings_line(session))
    except InputError as err:
        usage = f"; nothing changed. Usage: {command} {SETTERS[command][1]}, {SETTERS[command][2]}" \
            if command in SETTERS else ""
        warn(f"{err}{usage}")
    return True


def converse(session, interactive):
    """Read lines until the input ends or /quit; Ctrl-C anywhere returns to a fresh prompt."""
    while True:
        line = None
        try:
            line = input("> " if interactive else "")
            if line.startswith("/"):
                if not run_command(session, line):
                    return
            elif line.strip():
                continue_prompt(session.model, line, session, session.sampling, session.rng)
        except EOFError:  # Ctrl-D, or the end of piped input
            if interactive:
                print()  # so that the shell's prompt starts on a line of its own
            return
        except InputError as err:  # a prompt that cannot be continued; the session goes on
            warn(str(err))
        except KeyboardInterrupt:  # a continuation has ended its line already; a line being typed has not
            print(f"{'' if line else chr(10)}(interrupted; /quit or Ctrl-D leaves)", flush=True)


def main(argv=None):
    parser = prompting.sampling_parser(config, "Talk to a trained model: type text, it continues it "
                                               "(settings from config.py).")
    parser.add_argument("--list", action="store_true", help="list the runs in --checkpoint's runs/ folder, and leave")
    learners.add_options(parser)
    session = prompting.parse_sampling(parser, argv)  # the conversation keeps these settings, and changes them
    if session.list:
        print(runs.runs_table(Path(session.checkpoint)))
        return
    with learners.in_place(session):  # --exercises TRACK: the model computed by the functions you wrote
        talk(session)


def talk(session):
    """Read the model, say what it is and how to talk to it, then converse until Ctrl-D or /quit."""
    session.model = prompting.load_for_sampling(session, config.checkpoint)
    session.home = runs.listing_home(session.model.folder, config.checkpoint)  # the folder whose runs /models lists
    session.sampling = prompting.sampling(session.temperature, session.top_k, session.top_p)
    session.rng = np.random.default_rng(session.seed)  # /seed starts it again, so a session can be repeated
    print(prompting.describe(session.model))
    ends = "" if session.full else f", up to {REPLY_ENDS_SAID[checkpoint.corpus_kind(session.model.meta)][0]}"
    print(f"Type some text to have it continued{ends}; /help lists the commands; Ctrl-D or /quit leaves.", flush=True)
    if sys.stdin.isatty():
        with contextlib.suppress(ImportError):  # a platform without it works, without the editing
            import readline  # noqa: F401  line editing and history for input(), on a terminal only
    converse(session, sys.stdin.isatty())


if __name__ == "__main__":
    sys.stdin.reconfigure(errors="replace")  # undecodable bytes become U+FFFD, left out with a warning
    run_script(main)
