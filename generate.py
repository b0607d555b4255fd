"""Continue a prompt with a trained model, one-shot on the command line.

    python generate.py "The little cat" --max_new_tokens 80 --seed 1

Each new token is drawn from the last position's logits after the temperature, top-k and top-p
(transformer.py's generate, in its section "Drawing the next token"). The command line is talk.py's
(engineering/prompting.py): the sampling settings of config.py, the window, where the reply ends,
and --checkpoint, a run's name or a folder.
"""

import numpy as np

import config
from engineering import learners, prompting
from engineering.errors import run_script


def main(argv=None):
    parser = prompting.sampling_parser(config, "Continue a prompt with a trained model (see talk.py for a "
                                               "conversation).")
    parser.add_argument("prompt", help="the text to continue")
    learners.add_options(parser)
    args = prompting.parse_sampling(parser, argv)
    model = prompting.load_for_sampling(args, config.checkpoint)
    sampling = prompting.sampling(args.temperature, args.top_k, args.top_p)
    with learners.in_place(args):  # --exercises TRACK: the model computed by the functions you wrote
        prompting.continue_prompt(model, args.prompt, args, sampling, np.random.default_rng(args.seed))


if __name__ == "__main__":
    run_script(main)
