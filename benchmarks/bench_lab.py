"""The lab's speed: a look at the default model, and a look and a learn on GPT-2 124M with a 64-token text, beside
the same work done by Hugging Face's transformers in PyTorch in the same run. Run by hand (needs the gpt2 extra,
torch and transformers):

    python benchmarks/bench_lab.py [--rounds 5] [--threads 2] [--tokens 64]

Two models, their weights as good as random (the weights do not change the amount of work):
  1. the default model (config.py: 2 blocks of 2 heads, width 32) after one step of `python train.py` on the bundled
     sample, with the tokenizer the default run learns there (560 tokens), reading a text of its 16-token window;
  2. GPT-2 124M, random weights, a folder written as the hub holds it (benchmarks/bench_gpt2.py's write_gpt2_124m),
     reading a text of --tokens tokens.
For each, in turns, --rounds times: a look (lab.py's look: the forward with every head's attention, each position's
next tokens and what the sampling keeps of them, the logit lens after every block) and a learn (lab.py's learn:
loss_and_grads, every gradient norm, a step on a copy and the loss after it), as the page gets each: a request to
`python lab.py` serving the model in a process of its own, JSON both ways included; and transformers'
GPT2LMHeadModel of the same shape doing the same work (output_attentions and output_hidden_states, softmax, top-k,
the sampling's sort, the lens through ln_f and the head; then backward, the norms, and a forward with the stepped
weights), with --threads threads each (the lab's BLAS through its environment, torch's with set_num_threads).
Printed: the median and the fastest round of each.
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import config  # noqa: E402
from bench_gpt2 import write_gpt2_124m  # noqa: E402
from engineering import checkpoint  # noqa: E402
from engineering.corpus import SAMPLE_CORPUS, read_corpus  # noqa: E402
from engineering.settings import SettingsParser  # noqa: E402
from transformer import Sampling  # noqa: E402

SAMPLING = Sampling(config.temperature, config.top_k, config.top_p)
LR = 0.1
THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # what NumPy's BLAS reads as it starts


def default_model(folder):
    """(the default run's model after one step, `python train.py --max_steps 1` in folder, the sample's held-out
    text): its shape and tokenizer as the default run makes them."""
    subprocess.run([sys.executable, str(ROOT / "train.py"), "--max_steps", "1", "--checkpoint", str(folder), "--name",
                    "default"], check=True, capture_output=True)
    p = SettingsParser(config, "bench")
    s = p.settings(p.parse([]))
    corpus = read_corpus(SAMPLE_CORPUS, s.corpus_column, s.max_rows, s.val_fraction, s.seed)
    return checkpoint.load(Path(folder) / "runs" / "default"), corpus.val_text


@contextlib.contextmanager
def lab_serving(folder, threads=None):
    """The address of `python lab.py` serving the model in folder on a free port, a process of its own (with threads
    BLAS threads, where given), stopped after the with-block."""
    env = {**os.environ, **{name: str(threads) for name in THREADS if threads}}
    server = subprocess.Popen([sys.executable, str(ROOT / "lab.py"), "--checkpoint", str(folder), "--port", "0"],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        address = next((line.split()[4] for line in server.stdout if line.startswith("The lab is at ")), None)
        if address is None:
            raise SystemExit(f"lab.py stopped before it served {folder}")
        yield address
    finally:
        server.terminate()
        server.wait()


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


def measure(model, theirs, text, rounds, threads):
    """{what: [seconds of each round]}: ours, a request to the lab, and theirs, in turns."""
    import torch
    ids = torch.tensor(model.tokenizer.encode(text))  # every character known, and no more tokens than the lab reads
    sampling = {"temperature": SAMPLING.temperature, "top_k": SAMPLING.top_k, "top_p": SAMPLING.top_p}
    with lab_serving(model.folder, threads) as address:
        work = {"look, the page's request": lambda: post(address + "api/look", {"text": text, **sampling}),
                "look, transformers": lambda: theirs_look(torch, theirs, ids, SAMPLING),
                "learn, the page's request": lambda: post(address + "api/learn", {"text": text, "lr": LR}),
                "learn, transformers": lambda: theirs_learn(torch, theirs, ids, LR)}
        for function in work.values():  # a warm-up round
            function()
        seconds = {what: [] for what in work}
        for _ in range(rounds):
            for what, function in work.items():
                seconds[what].append(timed(function))
    return seconds


def report(title, seconds):
    print(title)
    for what, each in seconds.items():
        print(f"  {what:<28} median {statistics.median(each):7.3f} s   fastest {min(each):7.3f} s")
    for kind in ("look", "learn"):
        ours, theirs = (statistics.median(seconds[f"{kind}, {who}"]) for who in ("the page's request", "transformers"))
        print(f"  {kind}: the page's request takes {ours / theirs:.2f} times transformers' time (medians)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tokens", type=int, default=64, help="tokens of GPT-2's text")
    args = p.parse_args()
    import torch
    import transformers
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as folder:
        small, source = default_model(Path(folder) / "home")
        cfg = small.cfg
        theirs = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=cfg.vocab_size, n_positions=cfg.context_len, n_embd=cfg.emb_dim, n_layer=cfg.num_layers,
            n_head=cfg.num_heads, n_inner=cfg.ff_dim, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
            bos_token_id=None, eos_token_id=None, attn_implementation="eager")).eval()
        text = text_of_tokens(small.tokenizer, source, 16)
        report(f"the default model's shape ({sum(p.size for p in small.params.values()):,} parameters), a text of "
               f"16 tokens, {args.rounds} rounds, {args.threads} threads:",
               measure(small, theirs, text, args.rounds, args.threads))
        gpt2_folder = Path(folder) / "gpt2"
        gpt2_folder.mkdir()
        write_gpt2_124m(gpt2_folder, np.random.default_rng(0))
        gpt2 = checkpoint.load(gpt2_folder)
        theirs = transformers.GPT2LMHeadModel.from_pretrained(gpt2_folder, dtype=torch.float32, resid_pdrop=0.0,
                                                              embd_pdrop=0.0, attn_pdrop=0.0,
                                                              attn_implementation="eager").eval()
        text = text_of_tokens(gpt2.tokenizer, source, args.tokens)
        report(f"GPT-2 124M, random weights, a text of {args.tokens} tokens, {args.rounds} rounds, {args.threads} "
               f"threads:", measure(gpt2, theirs, text, args.rounds, args.threads))


if __name__ == "__main__":
    main()
