"""The engineering behind the learner's files: everything a real tool needs that is not the algorithm.

The top level holds what a learner reads (transformer.py, tokenizer.py, train.py, generate.py, talk.py,
lab.py, config.py, gradcheck.py); this package holds the rest, each module one job behind a small interface:

    settings.py         config.py's settings checked, and given on the command line
    corpus.py           reading a text or a CSV, the held-out part, the training windows
    runs.py             run folders: names, the listing, the default run, removal, resume, the lock
    run_log.py          a run as it goes: the door around train.py's loop, its files, progress, Ctrl-C
    checkpoint.py       a run's files: the model saved and loaded, the state to resume from, every file checked
    tokenizer_files.py  a tokenizer's file written and read back, every field checked
    gpt2.py             a Hugging Face GPT-2 folder read as the project's own model
    hf_tokenizer.py     a tokenizer.json read, encoding as `tokenizers` does; the project's written as one
    chat_template.py    a tokenizer_config.json's chat template rendered as transformers renders it
    prompting.py        what generate.py and talk.py share: the model they read, the prompt in, the reply out
    lab_server.py       lab.py's server: its rules on this machine, a request's fields read defensively; lab/ its page
    lab_models.py       the models the lab answers with, read again when their files change
    parallel.py         a batch shared out to threads or processes, their gradients averaged
    judge.py            the exercises' judge (python exercises/judge.py): each kind of function judged its own way
    learners.py         --exercises TRACK: the functions the learner wrote, judged, in the project's place
    planner.py          --minutes M: the model, merges, batch and steps chosen for the time, and the run kept to it
    files.py            files written whole or not at all; JSON read with its problem told
    errors.py           InputError, a person's bad input, and how a script says it in one line
    wording.py          how things are said to a person: counts, durations, the commands to type

Nothing here imports a script (train.py, generate.py, talk.py, lab.py) or config.py; the scripts import this package
and the learner's files.
"""
