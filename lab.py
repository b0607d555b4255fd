"""The lab: look inside your own model, forward and backward, in the browser.

    python lab.py [--checkpoint NAME|FOLDER] [--port 8765] [--open]

It serves a page on this machine and prints its address. For a text you type, the page shows six views, each
computed below by a short function over the project's own functions; the page only draws what they return.

    1. tokens     the text cut into the model's tokens, each with its loss: how surprised the model was by it
    2. next       at each position, the likeliest next tokens, and what temperature, top-k and top-p keep of them
    3. attention  every head of every block as a T x T map: the attention weights in transformer.forward's caches
    4. layers     the "logit lens": what the model would predict at each position if it stopped after each block
    5. learn      the backward: loss_and_grads' gradient, by tensor and by position, and the loss after one step
    6. runs       your runs with their losses as they train; choosing one shows it in the lab

A text is read as talk.py reads a prompt: characters the model has never seen are left out and named, and only its
last tokens are kept, as many as the model was trained to read. The server, its rules and the page's files are the
engineering (engineering/lab_server.py, engineering/lab/); the model it shows never changes under a request.
"""

import functools
import math
import sys
import webbrowser
from pathlib import Path

import numpy as np

import config
from engineering import checkpoint, corpus, lab_models, lab_server, learners, prompting, run_log, runs
from engineering.errors import InputError, run_script
from engineering.settings import SettingsParser
from transformer import (BLOCK_KEYS, block_forward, block_params, cross_entropy_forward, embed_forward, filtered_probs,
                         flat_buffer, forward, generate, layernorm_forward, linear_forward, loss_and_grads, softmax,
                         views_into)

PORT = 8765  # the page's port unless --port says otherwise
MOST_TOKENS = 128  # tokens the lab reads at most: at GPT-2's 1,024, its 144 maps would hold 151 million weights
TOP_NEXT = 10  # next tokens listed at each position
TOP_LENS = 3  # guesses listed at each position after each block
ATTENTION_DIGITS = 4  # the attention weights go to the page to 4 decimals: it draws them as shades
CURVE_POINTS = 300  # a run's training loss is drawn as at most this many means of consecutive steps
FIRST_CHARACTERS = 300  # of the text the page opens with: a row or a paragraph of the model's own text, cut at a line
# The step size the page starts at: one that lowers the loss of a trained model's own text, short enough that the
# first-order figure is near the loss it predicts. On 20 lines of the default run's text (4,000 steps, loss 3.28):
# 0.001 lowered all 20 (3.09 after, 3.08 to first order); 0.01 all 20 (2.13, 1.36); 0.1 only 13 (3.11, -15.9).
FIRST_LR = 0.001


# --- reading a text -------------------------------------------------------------------------------------------

def read_text(model, text):
    """(ids, what to say of them): the text's ids without the characters the model has never seen (named in
    "left_out"), cut to the last "window" tokens, tokens_read ("cut": how many went)."""
    ids, left_out = model.tokenizer.encode_known(text)
    if not ids:
        raise InputError(f"nothing is left of the text without {', '.join(map(repr, left_out))}, which the model "
                         f"has never seen: type characters it knows")
    window = tokens_read(model)
    return ids[-window:], {"left_out": left_out, "cut": max(0, len(ids) - window), "window": window}


def tokens_read(model):
    """The tokens of a text the lab reads at most: the seq_len the model was trained with, and at most MOST_TOKENS."""
    return min(prompting.trained_window(model), MOST_TOKENS)


def token_text(tokenizer, token_id):
    """A token's text; a GPT-2 token that holds only part of a character shows U+FFFD for that part."""
    return tokenizer.token_bytes(token_id).decode("utf-8", errors="replace")


def likeliest(probs, k):  # (T, V) -> (T, k) ids, the likeliest first
    """The k likeliest ids of each row, ties to the smaller id: k rounds of argmax, each taking the largest left.
    1.3 ms against np.argpartition's 59 ms at GPT-2's size (docs/engineering/performance.md, "The lab's two forms").

    Example: likeliest(np.array([[0.1, 0.3, 0.3, 0.3]]), 2) -> [[1, 2]]
    """
    left, rows, found = probs.copy(), np.arange(len(probs)), []
    for _ in range(min(k, probs.shape[-1])):
        best = np.argmax(left, axis=-1)  # (T,): the first of equal maxima, the smaller id
        found.append(best)
        left[rows, best] = -np.inf
    return np.stack(found, axis=-1)


def guesses(tokenizer, probs, k):  # (T, V) -> for each position, its k likeliest next tokens
    return [[{"id": int(i), "text": token_text(tokenizer, i), "prob": float(row[i])} for i in top]
            for row, top in zip(probs, likeliest(probs, k))]


def position_losses(logits, targets):  # (T, V), (T,) -> T losses in nats
    """The loss of each position alone: cross_entropy_forward of its row, -ln p(target). Their mean is the loss."""
    return [cross_entropy_forward(row[None], target[None])[0] for row, target in zip(logits, np.asarray(targets))]


def number(x):
    """x, or None where it is no finite number (the page is sent JSON, which has no NaN or infinity)."""
    return x if math.isfinite(x) else None


# --- views 1 to 4: the forward --------------------------------------------------------------------------------

def look(model, text, sampling):
    """Views 1 to 4 for a text: its tokens, the next tokens at each position, every head's attention, the layers."""
    ids, said = read_text(model, text)
    logits, cache = forward(model.params, np.array(ids), model.cfg)  # (T, V)
    probs = softmax(logits)  # (T, V): row t is the model's distribution of the token after t
    return {"tokens": tokens_view(model.tokenizer, ids, logits), "next": guesses(model.tokenizer, probs, TOP_NEXT),
            **kept_view(logits, probs, sampling), "attention": attention_view(cache),
            "layers": layers_view(model, ids), **said}


def tokens_view(tokenizer, ids, logits):
    """View 1: each token with its id and its loss, -ln p(token | the tokens before it) in nats (none for the first,
    which nothing predicts): what training makes small."""
    losses = [None, *position_losses(logits[:-1], ids[1:])]
    return [{"id": int(i), "text": token_text(tokenizer, i), "loss": loss} for i, loss in zip(ids, losses)]


def kept_view(logits, probs, sampling):
    """View 2's sampling: for each position's likeliest next tokens, the probability each is drawn with once
    transformer.filtered_probs has applied the temperature, top-k and top-p ("kept", 0 for one they drop); and how many
    tokens each position keeps, and their probability before the filters."""
    kept = [filtered_probs(row, sampling) for row in logits]
    top = likeliest(probs, TOP_NEXT)
    return {"kept": [[float(row[i]) for i in listed] for row, listed in zip(kept, top)],
            "kept_counts": [int(np.count_nonzero(row)) for row in kept],
            "kept_mass": [float(p[row > 0].sum()) for p, row in zip(probs, kept)],
            "sampling": {"temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p}}


def attention_view(cache):
    """View 3: the attention weights of every head of every block, [L][nh][T][T], from forward's cache: row t of a
    map is how much position t reads each position s <= t (each row sums to 1; later positions are masked, 0)."""
    _, block_caches, _, _ = cache
    return [np.round(block.attention.attn[0].astype(np.float64), ATTENTION_DIGITS).tolist() for block in block_caches]


def layers_view(model, ids):
    """View 4, the "logit lens": what the model would predict at each position if it stopped after the embeddings,
    and after each block: the final layer norm and the head applied to that point of the residual stream. After the
    last block this is the model's own prediction."""
    params, cfg = model.params, model.cfg
    X = embed_forward(params, np.array(ids)[None])  # (1, T, C)
    rows = [lens(model, X[0], ids, "the embeddings")]
    for layer in range(cfg.num_layers):
        X, _ = block_forward(X, block_params(params, layer), cfg)
        rows.append(lens(model, X[0], ids, f"block {layer}"))
    return rows


def lens(model, X, ids, after):  # (T, C) -> the guesses at each position, were X the last block's output
    params = model.params
    Xf, _ = layernorm_forward(X, params["lnf_gain"], params["lnf_shift"], model.cfg.ln_eps)
    logits, _ = linear_forward(Xf, params["W_out"], params["b_out"])  # (T, V)
    probs = softmax(logits)
    next_probs = [float(probs[t, ids[t + 1]]) for t in range(len(ids) - 1)]  # of the token that does come next
    return {"after": after, "top": guesses(model.tokenizer, probs, TOP_LENS), "next_prob": [*next_probs, None]}


# --- view 5: the backward -------------------------------------------------------------------------------------

BLOCK_PARTS = {"attention's layer norm": ("ln1_gain", "ln1_shift"),
               "attention": ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo"),
               "the MLP's layer norm": ("ln2_gain", "ln2_shift"), "the MLP": ("W1", "b1", "W2", "b2")}
assert sorted(sum(BLOCK_PARTS.values(), ())) == sorted(BLOCK_KEYS), "every tensor of a block is in one part"


def tensor_groups(cfg):
    """The parameter tensors by where they act, in the model's order: [{"name": ..., "tensors": [names]}, ...]."""
    groups = [("the embeddings", ["tok_emb", "pos_emb"])]
    for layer in range(cfg.num_layers):
        groups += [(f"block {layer}: {part}", [f"block{layer}.{key}" for key in keys])
                   for part, keys in BLOCK_PARTS.items()]
    groups += [("the final layer norm", ["lnf_gain", "lnf_shift"]), ("the head", ["W_out", "b_out"])]
    return [{"name": name, "tensors": tensors} for name, tensors in groups]


def learn(model, text, lr):
    """View 5 for the loss of predicting the text as training does, each position predicting the next token:
    the norm of the gradient of every tensor; the norm at each position's input vector, grads["pos_emb"][t] (the
    input X0[t] = tok_emb[ids[t]] + pos_emb[t] hands its gradient to both); and what one step params - lr * grads
    does to the loss, taken on a copy: the lab's model never changes."""
    ids, said = read_text(model, text)
    if len(ids) < 2:
        raise InputError("the backward needs at least two tokens: each position learns to predict the next one")
    inputs, targets = np.array(ids[:-1]), np.array(ids[1:])
    loss, grads = loss_and_grads(model.params, inputs, targets, model.cfg)
    norms = {name: float(np.linalg.norm(grad)) for name, grad in grads.items()}
    squared = sum(norm * norm for norm in norms.values())  # |g|^2, the whole gradient's squared norm
    input_norms = np.linalg.norm(grads["pos_emb"][:len(inputs)], axis=-1).tolist()  # |dL/dX0[t]| for each t
    with np.errstate(all="ignore"):  # a step too long overflows: its loss is then no number, and said so
        stepped = step_over(grads, model.params, lr)
        before, after = (position_losses(forward(params, inputs, model.cfg)[0], targets)
                         for params in (model.params, stepped))
    loss_after, predicted = float(np.mean(after)), loss - lr * squared  # to first order, L(p - lr g) = L - lr |g|^2
    return {"loss": loss, "grad_norms": norms, "groups": tensor_groups(model.cfg), "grad_norm": math.sqrt(squared),
            "input_grad_norms": input_norms, "lr": lr, "loss_after": number(loss_after),
            "loss_after_said": None if math.isfinite(loss_after) else NO_LOSS_AFTER,
            "predicted_loss_after": number(predicted), "position_losses": before,
            "position_losses_after": [number(x) for x in after],
            "tokens": [{"id": int(i), "text": token_text(model.tokenizer, i)} for i in ids], **said}


NO_LOSS_AFTER = ("no number: the step is too long for float32, the weights p - lr * g or the logits they give "
                 "overflow; a shorter step gives one")


def step_over(grads, params, lr):
    """New weights, params - lr * grads, written over the gradient's buffer, which is read no more: the model's own
    stay as they are. The parameters are one vector (transformer.flat_buffer), so the step is two lines of NumPy.
    Over the gradient, not into a new buffer: 0.08 to 0.19 s against 0.25 to 3.4 s at GPT-2 124M
    (docs/engineering/performance.md, "The lab's two forms")."""
    weights = flat_buffer(grads)
    weights *= -lr  # -lr g
    weights += flat_buffer(params)  # p - lr g
    return views_into(weights, {name: param.shape for name, param in params.items()})


# --- "continue one token" and view 6, the runs ----------------------------------------------------------------

def continue_text(model, text, sampling, seed):
    """The text with one more token, drawn as talk.py --exact draws it (transformer.generate, after temperature,
    top-k and top-p) from a generator seeded with seed: the same seed draws the same token."""
    ids, said = read_text(model, text)
    drawn = next(generate(model.params, model.cfg, ids, 1, said["window"], sampling, np.random.default_rng(seed)))
    piece = token_text(model.tokenizer, drawn)
    return {"id": drawn, "token": piece, "text": text + piece, **said}


def runs_view(models, memo):
    """View 6: the runs of the lab's home folder, the last saved first (as talk.py --list lists them), each with its
    losses; "first": the run the lab started with, where it is one of them."""
    listed = []
    for folder in runs.run_folders(models.home):
        try:
            listed.append(memo(folder, run_view))
        except FileNotFoundError:
            pass  # deleted while the lab read it: it is simply no longer listed
    listed.sort(key=lambda run: run["saved"], reverse=True)
    first = models.first.folder
    return {"home": str(models.home), "first": first.name if runs.home_of(first) == models.home else None,
            "runs": listed}


def run_view(folder):
    run = runs.summarize(folder)
    return {"name": folder.name, "state": run.state(), "saved": run.saved.isoformat(timespec="seconds"),
            "corpus": run.corpus, "step": run.step, "total_steps": run.total_steps, "has_model": run.has_model,
            "best_bpc": None if math.isnan(run.best_bpc) else run.best_bpc, "damaged": run.damaged,
            "curves": loss_curves(folder)}


def loss_curves(folder):
    """A run's losses.csv as curves: the training loss as at most CURVE_POINTS means of consecutive steps, and
    every validation loss."""
    table = run_log.read_losses(folder)
    if table is None:
        return None
    steps, train = (np.asarray(table[column], dtype=np.float64) for column in ("step", "train_loss"))
    buckets = np.array_split(np.arange(len(steps)), min(len(steps), CURVE_POINTS))
    val = table.dropna(subset=["val_loss"]) if "val_loss" in table else table.iloc[:0]
    return {"steps": [float(steps[b].mean()) for b in buckets if len(b)],
            "train": [float(train[b].mean()) for b in buckets if len(b)],
            "val_steps": val["step"].astype(float).tolist(), "val": val["val_loss"].astype(float).tolist()}


# --- the text the page opens with --------------------------------------------------------------------------------

def first_text(model):
    """{"text", "text_from"}: the text the page opens with, already looked at, and where it comes from. The start of
    the model's own training text (corpus.read_corpus with the settings it was trained with); where that cannot be
    read (its corpus moved or changed since, or a GPT-2, which records none), the first row of the bundled sample."""
    recorded, settings = model.meta.get("corpus"), model.meta.get("settings")
    if not isinstance(recorded, dict) or not isinstance(settings, dict):
        return sample_opening("the model records no corpus")
    path = Path(str(recorded.get("path")))
    try:
        if checkpoint.sha256_of(path) != recorded.get("sha256"):
            return sample_opening(f"{path} has changed since the model was trained on it")
        read = corpus.read_corpus(path, settings.get("corpus_column", config.corpus_column),
                                  settings.get("max_rows", config.max_rows),
                                  settings.get("val_fraction", config.val_fraction), settings.get("seed", config.seed))
    except (InputError, OSError) as err:
        return sample_opening(f"its own corpus cannot be read: {err}")
    return {"text": opening(read.train_text, read.kind), "text_from": f"the start of the text the model was "
                                                                       f"trained on, {path}"}


def sample_opening(why):
    """first_text's answer where the model's own text cannot be read (why): the sample corpus's first row."""
    rows, _, _ = corpus.read_rows(corpus.SAMPLE_CORPUS, "text", 1)
    return {"text": opening(rows[0] + "\n", "rows"), "text_from": f"the first row of the project's sample corpus, "
                                                                    f"data/{corpus.SAMPLE_CORPUS.name} ({why})"}


def opening(text, kind):
    """The text's first row or paragraph (where a reply of a model of that kind ends, prompting.reply_end), at most
    FIRST_CHARACTERS, cut at a line's end where one comes before.

    Example: opening("ROMEO:\\nO, she doth\\n\\nJULIET:", "text") -> "ROMEO:\\nO, she doth\\n"
    """
    text = text.lstrip("\n")
    end = prompting.reply_end(text, kind)
    first = text if end is None else text[:end + 1]
    if len(first) > FIRST_CHARACTERS:
        cut = first[:FIRST_CHARACTERS]
        first = cut[:cut.rfind("\n") + 1] or cut
    return first


# --- the page's API, and the command line ---------------------------------------------------------------------

def about(model, warning=""):
    """What the page says of the model it shows."""
    cfg = model.cfg
    try:
        described = prompting.describe(model)
    except InputError as err:  # model.json lacks what training records: the model itself is whole
        described = f"model {model.folder.name} ({err})"
    return {"name": model.folder.name, "about": described, "layers": cfg.num_layers, "heads": cfg.num_heads,
            "vocab_size": cfg.vocab_size, "window": tokens_read(model), "warning": warning}


def api(models, settings):
    """The lab's JSON API, {(method, path): function}: each request's fields checked (a status and one line where one
    is wrong), then the view it asks for, on the model it names (its run; null: the one the lab started with)."""
    memo = lab_models.FolderMemo()
    opened = functools.cache(lambda: first_text(models.first))  # read once: a corpus may be large

    def sampling_of(body):
        return prompting.sampling(lab_server.number_field(body, "temperature", settings.temperature),
                                  lab_server.whole_field(body, "top_k", settings.top_k),
                                  lab_server.number_field(body, "top_p", settings.top_p))

    def on_model(view, *fields):
        def answer(body):
            model, warning = models.get(lab_server.name_field(body, "run"))
            return {**view(model, lab_server.text_field(body, "text"), *(field(body) for field in fields)),
                    "model": about(model, warning)}
        return answer

    return {
        ("GET", "/api/start"): lambda: {"model": about(models.first), "seed": settings.seed, "lr": FIRST_LR,
                                        "sampling": {"temperature": settings.temperature, "top_k": settings.top_k,
                                                     "top_p": settings.top_p}, **opened()},
        ("POST", "/api/look"): on_model(look, sampling_of),
        ("POST", "/api/learn"): on_model(learn, lr_field),
        ("POST", "/api/continue"): on_model(continue_text, sampling_of,
                                            lambda body: lab_server.whole_field(body, "seed", settings.seed)),
        ("GET", "/api/runs"): lambda: runs_view(models, memo),
    }


def lr_field(body):
    """The request's step size, "lr": a number, 0 or more (a step too long to give a loss is said in the answer)."""
    lr = lab_server.number_field(body, "lr")
    if lr < 0:
        raise lab_server.RequestError(400, f'"lr" must be 0 or more: the step goes down the gradient; got {lr:g}')
    return lr


SETTINGS = ("checkpoint", "temperature", "top_k", "top_p", "seed")  # of config.py: the model, and how the page starts


def command_line(argv):
    """The lab's command line, parsed and checked: config.py's settings the page starts with, and where it listens."""
    helps = {"checkpoint": prompting.CHECKPOINT_HELP,
             "seed": "the seed of the page's first 'continue one token'; each token drawn uses the next"}
    parser = SettingsParser(config, "The lab: a page on this machine that shows inside a trained model, forward and "
                                    "backward, for a text you type.", SETTINGS, helps)
    parser.add_argument("--port", type=int, default=PORT, help="the port the page is served on; 0: a free one")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on: another than this machine's "
                                                            "own (127.0.0.1) lets other machines of the network use "
                                                            "your lab")
    parser.add_argument("--open", action="store_true", help="open the page in the browser (nothing opens by default)")
    learners.add_options(parser)
    args = prompting.parse_sampling(parser, argv)
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port must be from 0 to 65535, got {args.port}")
    lab_server.listening_address(args.host)  # every address, in any spelling, refused before the model is read
    prompting.sampling(args.temperature, args.top_k, args.top_p)  # checked before the model is read
    return args


def main(argv=None):
    args = command_line(argv)
    with learners.in_place(args):  # --exercises TRACK: the model computed by the functions you wrote
        serve(args)


def serve(args):
    """Read the model, start the server and serve until Ctrl-C."""
    args.window = 0
    model = prompting.load_for_sampling(args, config.checkpoint, decoding=False)  # step_over adds its packed buffer
    models = lab_models.Models(model, runs.listing_home(model.folder, config.checkpoint))  # as talk.py's /models
    server = lab_server.start(api(models, args), args.host, args.port)
    if not server.loopback:
        prompting.warn(f"warning: the lab listens on {args.host}: other machines that reach this address can use it")
    print(prompting.describe(model))
    print(f"The lab is at {server.url} (Ctrl-C stops it)", flush=True)
    if args.open:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("the lab stopped (Ctrl-C)", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        server.server_close()


if __name__ == "__main__":
    run_script(main)
