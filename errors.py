"""The one exception type for a person's bad input, kept apart from bugs.

A setting that cannot work, a corpus that is missing or not text, a tokenizer file or checkpoint
that is broken or foreign, a prompt with nothing the model knows: the project raises InputError,
whose message says what is wrong and what to do, and the scripts turn it into one line on stderr
and exit status 2 (config.run). Every other exception, NumPy's shape and broadcast errors
included, is a bug in the code and keeps its traceback, so a learner who edits the model sees the
line that broke.
"""


class InputError(ValueError):
    """Bad input from a person: the message names it and says what to do."""
