"""The lab's speed: a look at the default model, and a look and a learn on GPT-2 124M with a 64-token text, beside
the same work done by Hugging Face's transformers in PyTorch in the same run. Run by hand (needs the gpt2 extra,
torch and transformers):

    python benchmarks/bench_lab.py [--rounds 5] [--threads 2] [--tokens 64]

Two models, both with random weights (the weights do not change the amount of work):
  1. the default model's shape (config.py: 2 blocks of 2 heads, width 32), with the tokenizer the default run learns
     on the bundled sample (560 tokens), reading a text of its 16-token window;
  2. GPT-2 124M, a folder written as the hub holds it (benchmarks/bench_gpt2.py's write_gpt2_124m), reading a text
     of --tokens tokens.
For each, in turns, --rounds times: a look (lab.look: the forward with every head's attention, each position's next
tokens and what the sampling keeps of them, the logit lens after every block) and a learn (lab.learn: loss_and_grads,
every gradient norm, a step on a copy and the loss after it), each as the function and as the page gets it, a
request to the lab's server in this process, JSON both ways included; and transformers' GPT2LMHeadModel of the same
shape doing the same work (output_attentions and output_hidden_states, softmax, top-k, the sampling's sort, the lens
through ln_f and the head; then backward, the norms, and a forward with the stepped weights), with --threads threads
each (BLAS's through threadpoolctl, torch's with set_num_threads). Printed: the median and the fastest round of each.
"""

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import types
import urllib.request
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import config  # noqa: E402
import lab  # noqa: E402
import train  # noqa: E402
from bench_gpt2 import write_gpt2_124m  # noqa: E402
from engineering import checkpoint, lab_models, lab_server  # noqa: E402
from engineering.corpus import SAMPLE_CORPUS, read_corpus  # noqa: E402
from engineering.settings import SettingsParser  # noqa: E402
from generate import Sampling  # noqa: E402

SAMPLING = Sampling(config.temperature, config.top_k, config.top_p)
LR = 0.1


def default_model():
    """The default run's model, random weights: its shape and tokenizer as `python train.py` makes them."""
    p = SettingsParser(config, "bench")
    s = p.settings(p.parse([]))
    corpus = read_corpus(SAMPLE_CORPUS, s.corpus_column, s.max_rows, s.val_fraction, s.seed)
    params, cfg, tokenizer = train.start_model(corpus, s)
    model = checkpoint.Checkpoint(params, cfg, tokenizer, {"settings": {"seq_len": s.seq_len}}, Path("default"))
    return model, corpus.val_text


def text_of_tokens(tokenizer, source, count):
    """The shortest start of source that is count tokens."""
    for end in range(count, len(source)):
        if len(tokenizer.encode(source[:end])) >= count:
            return source[:end]
    raise SystemExit(f"the text is shorter than {count} tokens")


def post(url, body):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


# --- the same work in PyTorch ----------------------------------------------------------------------------------------

def theirs_look(torch, model, ids, sampling):
    """transformers' forward with every attention map and hidden state; each position's softmax, its 10 likeliest and
    the sampling's sort (temperature, top-p); the lens: ln_f and the head on the embeddings and each block's output
    (transformers' last hidden state has ln_f applied already: it is the model's own prediction)."""
    with torch.no_grad():
        out = model(ids[None], output_attentions=True, output_hidden_states=True)
        attention = torch.stack(out.attentions)[:, 0].tolist()
        probs = out.logits[0].softmax(-1)
        top = probs.topk(10)
        kept, _ = (out.logits[0] / sampling.temperature).softmax(-1).sort(descending=True)
        kept.cumsum(-1)
        lens = [model.lm_head(model.transformer.ln_f(hidden[0])).softmax(-1).topk(3)
                for hidden in out.hidden_states[:-1]]
    return attention, top, lens


def theirs_learn(torch, model, ids, lr):
    """Backward of the mean loss of every position predicting the next; every gradient's norm, the input's through
    wpe's rows; the loss of each position before and after a step on a copy of the weights (torch.func)."""
    model.zero_grad(set_to_none=True)
    inputs, targets = ids[None, :-1], ids[1:]
    logits = model(inputs).logits[0]
    losses = torch.nn.functional.cross_entropy(logits, targets, reduction="none")
    losses.mean().backward()
    norms = {name: float(p.grad.norm()) for name, p in model.named_parameters()}
    inputs_norms = model.transformer.wpe.weight.grad[:len(targets)].norm(dim=-1).tolist()
    with torch.no_grad():
        stepped = {name: p - lr * p.grad for name, p in model.named_parameters()}
        after = torch.nn.functional.cross_entropy(torch.func.functional_call(model, stepped, (inputs,)).logits[0],
                                                  targets, reduction="none")
    return losses.mean().item(), norms, inputs_norms, after.tolist()


# --- one model, both ways -------------------------------------------------------------------------------------

def timed(function):
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def measure(model, theirs, text, rounds, learn_too):
    """{what: [seconds of each round]}: ours as a function and over HTTP, theirs, in turns."""
    import torch
    ids = torch.tensor(lab.read_text(model, text)[0])
    server = lab_server.start(lab.api(lab_models.Models(model, Path(tempfile.gettempdir())),
                                      types.SimpleNamespace(**vars(SAMPLING), seed=0)), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = {"look, lab.look": lambda: lab.look(model, text, SAMPLING),
            "look, the page's request": lambda: post(server.url + "api/look", {"text": text}),
            "look, transformers": lambda: theirs_look(torch, theirs, ids, SAMPLING)}
    if learn_too:
        work.update({"learn, lab.learn": lambda: lab.learn(model, text, LR),
                     "learn, the page's request": lambda: post(server.url + "api/learn", {"text": text, "lr": LR}),
                     "learn, transformers": lambda: theirs_learn(torch, theirs, ids, LR)})
    for function in work.values():  # a warm-up round
        function()
    seconds = {what: [] for what in work}
    for _ in range(rounds):
        for what, function in work.items():
            seconds[what].append(timed(function))
    server.shutdown()
    server.server_close()
    return seconds


def report(title, seconds):
    print(title)
    for what, each in seconds.items():
        print(f"  {what:<28} median {statistics.median(each):7.3f} s   fastest {min(each):7.3f} s")
    for kind in ("look", "learn"):
        if f"{kind}, transformers" in seconds:
            ours, theirs = (statistics.median(seconds[f"{kind}, {who}"]) for who in (f"lab.{kind}", "transformers"))
            ratio = ours / theirs
            print(f"  {kind}: lab.{kind} takes {ratio:.2f} times transformers' time (medians)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tokens", type=int, default=64, help="tokens of GPT-2's text")
    args = p.parse_args()
    import torch
    import transformers
    torch.set_num_threads(args.threads)
    with threadpool_limits(args.threads), tempfile.TemporaryDirectory() as folder:
        small, source = default_model()
        cfg = small.cfg
        theirs = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=cfg.vocab_size, n_positions=cfg.context_len, n_embd=cfg.emb_dim, n_layer=cfg.num_layers,
            n_head=cfg.num_heads, n_inner=cfg.ff_dim, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
            bos_token_id=None, eos_token_id=None, attn_implementation="eager")).eval()
        text = text_of_tokens(small.tokenizer, source, 16)
        report(f"the default model's shape ({sum(p.size for p in small.params.values()):,} parameters), a text of "
               f"16 tokens, {args.rounds} rounds, {args.threads} threads:",
               measure(small, theirs, text, args.rounds, True))
        write_gpt2_124m(Path(folder), np.random.default_rng(0))
        gpt2 = checkpoint.load(folder)
        theirs = transformers.GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float32, resid_pdrop=0.0,
                                                              embd_pdrop=0.0, attn_pdrop=0.0,
                                                              attn_implementation="eager").eval()
        text = text_of_tokens(gpt2.tokenizer, source, args.tokens)
        report(f"GPT-2 124M, random weights, a text of {args.tokens} tokens, {args.rounds} rounds, {args.threads} "
               f"threads:", measure(gpt2, theirs, text, args.rounds, True))


if __name__ == "__main__":
    main()
